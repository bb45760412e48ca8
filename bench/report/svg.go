package report

import (
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units (pixels at 100% zoom).
const (
	chartWidth = 560.0
	charW      = 6.8 // estimated width of a character of the 12px labels
)

// svg builds one inline SVG element. Every number goes through num, so NaN
// and infinities never reach the output, and all text is escaped.
type svg struct {
	b    strings.Builder
	w, h float64
}

func newSVG(w, h float64, label string) *svg {
	s := &svg{w: w, h: h}
	s.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="` + num(w) +
		`" height="` + num(h) + `" viewBox="0 0 ` + num(w) + " " + num(h) + `" aria-label="` + esc(label) + `">`)
	return s
}

// html closes the element and returns it for a template.
func (s *svg) html() template.HTML {
	s.b.WriteString("</svg>")
	// The markup is built here from escaped text and formatted numbers only.
	return template.HTML(s.b.String())
}

// raw appends markup the caller built from esc and num.
func (s *svg) raw(markup string) { s.b.WriteString(markup) }

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, w float64) {
	s.b.WriteString(`<line x1="` + num(x1) + `" y1="` + num(y1) + `" x2="` + num(x2) + `" y2="` + num(y2) +
		`" stroke="` + esc(stroke) + `" stroke-width="` + num(w) + `"/>`)
}

// rect draws a rectangle with an optional tooltip.
func (s *svg) rect(x, y, w, h float64, fill, tooltip string) {
	s.b.WriteString(`<rect x="` + num(x) + `" y="` + num(y) + `" width="` + num(max(finite(w), 0)) +
		`" height="` + num(max(finite(h), 0)) + `" fill="` + esc(fill) + `" rx="2"`)
	if tooltip == "" {
		s.b.WriteString("/>")
		return
	}
	s.b.WriteString("><title>" + esc(tooltip) + "</title></rect>")
}

// text draws a label; anchor is start, middle or end; class selects a style
// from the page's stylesheet.
func (s *svg) text(x, y float64, anchor, class, content string) {
	s.b.WriteString(`<text x="` + num(x) + `" y="` + num(y) + `" text-anchor="` + anchor + `"`)
	if class != "" {
		s.b.WriteString(` class="` + esc(class) + `"`)
	}
	s.b.WriteString(">" + esc(content) + "</text>")
}

// polyline draws a series of points.
func (s *svg) polyline(xs, ys []float64, stroke string, w float64) {
	s.polylineDash(xs, ys, stroke, w, "")
}

// polylineDash draws a series of points, dashed by the stroke-dasharray
// dash unless it is empty.
func (s *svg) polylineDash(xs, ys []float64, stroke string, w float64, dash string) {
	var pts strings.Builder
	for i := range xs {
		if i > 0 {
			pts.WriteByte(' ')
		}
		pts.WriteString(num(xs[i]) + "," + num(ys[i]))
	}
	s.b.WriteString(`<polyline points="` + pts.String() + `" fill="none" stroke="` + esc(stroke) +
		`" stroke-width="` + num(w) + `" stroke-linejoin="round" stroke-linecap="round"`)
	if dash != "" {
		s.b.WriteString(` stroke-dasharray="` + esc(dash) + `"`)
	}
	s.b.WriteString("/>")
}

// circle draws a point with an optional tooltip.
func (s *svg) circle(x, y, r float64, fill, tooltip string) {
	s.b.WriteString(`<circle cx="` + num(x) + `" cy="` + num(y) + `" r="` + num(r) + `" fill="` + esc(fill) + `"`)
	if tooltip == "" {
		s.b.WriteString("/>")
		return
	}
	s.b.WriteString("><title>" + esc(tooltip) + "</title></circle>")
}

// legendLayout places legend entries in rows within a width.
type legendLayout struct {
	names  []string
	xs, ys []float64 // offsets of each entry from the legend's corner
	height float64
}

// layoutLegend lays out a swatch and a name per entry, left to right,
// wrapping within maxW.
func layoutLegend(names []string, maxW float64) legendLayout {
	const rowH = 18
	l := legendLayout{names: names, height: rowH}
	x, y := 0.0, 0.0
	for _, n := range names {
		w := 18 + textWidth(n) + 16
		if x > 0 && x+w > maxW {
			x, y = 0, y+rowH
		}
		l.xs, l.ys = append(l.xs, x), append(l.ys, y)
		x += w
	}
	l.height = y + rowH
	return l
}

// legend draws a laid-out legend at (x, y) with one color per entry; the
// entries bold says are in bold.
func (s *svg) legend(x, y float64, l legendLayout, colors []string, bold func(string) bool) {
	for i, n := range l.names {
		ex, ey := x+l.xs[i], y+l.ys[i]
		s.rect(ex, ey+3, 12, 12, colors[i], "")
		class := "legend"
		if bold(n) {
			class = "legend strong"
		}
		s.text(ex+18, ey+13, "start", class, n)
	}
}

// placeholder is a small chart saying why there is nothing to draw.
func placeholder(msg string) template.HTML {
	s := newSVG(chartWidth, 64, msg)
	s.rect(0.5, 0.5, chartWidth-1, 63, "#f7f7f8", "")
	s.text(chartWidth/2, 36, "middle", "muted", msg)
	return s.html()
}

// num formats a coordinate with at most two decimals; NaN and infinities
// become 0.
func num(f float64) string {
	f = finite(f)
	f = math.Round(f*100) / 100
	if f == 0 {
		return "0" // also folds -0
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// esc escapes text for XML content and attribute values.
func esc(s string) string { return template.HTMLEscapeString(s) }

// textWidth estimates the rendered width of s in a 12px label.
func textWidth(s string) float64 { return float64(width(s)) * charW }

// niceTicks returns an axis top at or above hi and evenly spaced ticks from 0
// to it, stepping by 1, 2 or 5 times a power of ten, about target of them.
// A non-positive or non-finite hi gives the axis [0, 1].
func niceTicks(hi float64, target int) (top float64, ticks []float64) {
	hi = finite(hi)
	if hi <= 0 {
		hi = 1
	}
	if target < 1 {
		target = 1
	}
	raw := hi / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	var step float64
	switch norm := raw / mag; {
	case norm <= 1:
		step = mag
	case norm <= 2:
		step = 2 * mag
	case norm <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	n := int(math.Ceil(hi/step - 1e-9))
	if n < 1 {
		n = 1
	}
	for i := 0; i <= n; i++ {
		// Multiplying (rather than adding steps) keeps ticks round.
		t := float64(i) * step
		t, _ = strconv.ParseFloat(strconv.FormatFloat(t, 'g', 12, 64), 64)
		ticks = append(ticks, t)
	}
	return ticks[n], ticks
}
