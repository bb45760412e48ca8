package report

import (
	"html/template"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/strata-db/strata/bench"
)

// engineColors are the fixed colors of the known engines. Strata's is the
// strongest; related engines get related hues.
var engineColors = map[string]string{
	strataName: "#e4491c",
	// Strata's GC-policy variants: warm hues beside Strata's own.
	"strata/passive":        "#f4a259",
	"strata/reverse-lookup": "#b8290f",
	"strata/rewrite":        "#e0b000",
	"strata/cost":           "#d6336c",
	"strata/off":            "#7b4b2a",
	"pebble":                "#3f6fb5",
	"pebble-vs":             "#6cb4d9",
	"badger":                "#8e6bb8",
	"rocksdb":               "#3d9a50",
	"rocksdb-blob":          "#9ccc65",
}

// spareColors go to engines without a fixed color, in the order they appear.
var spareColors = []string{"#8c6d31", "#d4a017", "#e377c2", "#17a2b8", "#7f7f7f", "#bcbd22", "#5d4037", "#2f4f4f"}

// palette assigns every engine of a report its color.
func palette(engines []string) map[string]string {
	out := make(map[string]string, len(engines))
	used := map[string]bool{}
	for _, e := range engines {
		if c, ok := engineColors[e]; ok {
			out[e] = c
			used[c] = true
		}
	}
	next := 0
	for _, e := range engines {
		if _, ok := out[e]; ok {
			continue
		}
		c := "#999999"
		for next < len(spareColors) {
			cand := spareColors[next]
			next++
			if !used[cand] {
				c = cand
				break
			}
		}
		out[e] = c
	}
	return out
}

// barItem is one engine's bar.
type barItem struct {
	engine string
	value  float64
	label  string // the value, written at the end of the bar
	aside  string // a secondary label after the value, such as a ratio
	note   string // when set, written in place of the bar (skipped engines)
	// lo and hi, when hi > lo, are the smallest and largest value over
	// repeated runs (value is their median): drawn as a whisker.
	lo, hi float64
}

// barChart draws a horizontal bar per item, Strata's highlighted, on an axis
// from 0 with round ticks.
func barChart(title string, items []barItem, colors map[string]string) template.HTML {
	if len(items) == 0 {
		return placeholder("no results")
	}
	const (
		rowH  = 26.0
		barH  = 16.0
		top   = 6.0
		axisH = 22.0
	)
	labelW, rightW := 60.0, 48.0
	hi := 0.0
	for _, it := range items {
		labelW = max(labelW, textWidth(it.engine)+14)
		if it.note == "" {
			rightW = max(rightW, textWidth(it.label+"  "+it.aside)+12)
			hi = max(hi, finite(it.value), finite(it.hi))
		}
	}
	labelW = min(labelW, 150)
	rightW = min(rightW, 170)
	plotW := chartWidth - labelW - rightW
	axisTop, ticks := niceTicks(hi, 5)
	plotH := float64(len(items)) * rowH
	s := newSVG(chartWidth, top+plotH+axisH, title)

	for i, it := range items {
		if isStrata(it.engine) {
			s.rect(0, top+float64(i)*rowH, chartWidth, rowH, "#fdf0ea", "")
		}
	}
	for _, t := range ticks {
		x := labelW + plotW*t/axisTop
		s.line(x, top, x, top+plotH, "#e4e4e7", 1)
		s.text(x, top+plotH+15, "middle", "tick", fmtCompact(t))
	}
	for i, it := range items {
		y := top + float64(i)*rowH
		class := "label"
		if isStrata(it.engine) {
			class = "label strong"
		}
		s.text(labelW-8, y+rowH/2+4, "end", class, truncate(it.engine, int((labelW-10)/charW)))
		if it.note != "" {
			room := int((plotW + rightW - 8) / charW)
			s.text(labelW+6, y+rowH/2+4, "start", "muted italic", truncate(it.note, room))
			continue
		}
		v := max(finite(it.value), 0)
		w := plotW * v / axisTop
		if v > 0 {
			w = max(w, 1.5)
		}
		tip := it.engine + ": " + it.label
		if it.aside != "" {
			tip += " (" + it.aside + ")"
		}
		s.rect(labelW, y+(rowH-barH)/2, w, barH, colors[it.engine], tip)
		if it.hi > it.lo {
			// The whisker: min to max over the runs, across the bar's end
			// (none when every run measured the same).
			x0, x1, cy := labelW+plotW*max(finite(it.lo), 0)/axisTop, labelW+plotW*finite(it.hi)/axisTop, y+rowH/2
			s.line(x0, cy, x1, cy, "#18181b", 1.25)
			s.line(x0, cy-4, x0, cy+4, "#18181b", 1.25)
			s.line(x1, cy-4, x1, cy+4, "#18181b", 1.25)
			w = max(w, x1-labelW)
		}
		vc := "value"
		if isStrata(it.engine) {
			vc = "value strong"
		}
		s.raw(`<text x="` + num(labelW+w+6) + `" y="` + num(y+rowH/2+4) + `" class="` + vc + `">` + esc(it.label))
		if it.aside != "" {
			s.raw(`<tspan class="muted" dx="8">` + esc(it.aside) + `</tspan>`)
		}
		s.raw("</text>")
	}
	s.line(labelW, top, labelW, top+plotH, "#52525b", 1)
	return s.html()
}

// series is one engine's throughput over time.
type series struct {
	engine string
	points []bench.Sample
}

// lineChart draws every series on shared axes: seconds since the benchmark
// started against throughput, with a legend above.
func lineChart(title, unit string, all []series, colors map[string]string) template.HTML {
	var names, cols []string
	maxX, maxY := 0.0, 0.0
	points := 0
	for _, se := range all {
		if len(se.points) == 0 {
			continue
		}
		names = append(names, se.engine)
		cols = append(cols, colors[se.engine])
		for _, p := range se.points {
			maxX = max(maxX, finite(p.Elapsed.Seconds()))
			maxY = max(maxY, finite(p.OpsPerSec))
			points++
		}
	}
	if points == 0 {
		return placeholder("no throughput samples")
	}
	const (
		left   = 52.0
		right  = 18.0
		bottom = 38.0
		plotH  = 190.0
	)
	legend := layoutLegend(names, chartWidth-left-right)
	top := 8 + legend.height + 22
	h := top + plotH + bottom
	s := newSVG(chartWidth, h, title)
	s.legend(left, 8, legend, cols, isStrata)
	plotW := chartWidth - left - right

	xTop, xTicks := niceTicks(maxX, 6)
	yTop, yTicks := niceTicks(maxY, 4)
	px := func(sec float64) float64 { return left + plotW*max(finite(sec), 0)/xTop }
	py := func(v float64) float64 { return top + plotH - plotH*max(finite(v), 0)/yTop }

	for _, t := range yTicks {
		y := py(t)
		s.line(left, y, left+plotW, y, "#e4e4e7", 1)
		s.text(left-6, y+4, "end", "tick", fmtCompact(t))
	}
	s.text(left-6, top-10, "end", "tick", unit)
	for _, t := range xTicks {
		x := px(t)
		s.line(x, top+plotH, x, top+plotH+4, "#52525b", 1)
		s.text(x, top+plotH+16, "middle", "tick", fmtCompact(t))
	}
	s.text(left+plotW, top+plotH+32, "end", "tick", "seconds")
	s.line(left, top+plotH, left+plotW, top+plotH, "#52525b", 1)
	s.line(left, top, left, top+plotH, "#52525b", 1)

	// Strata last, so it is drawn on top.
	order := strataLast(all, func(se series) string { return se.engine })
	for _, se := range order {
		if len(se.points) == 0 {
			continue
		}
		c := colors[se.engine]
		w := 1.75
		if isStrata(se.engine) {
			w = 2.75
		}
		xs := make([]float64, len(se.points))
		ys := make([]float64, len(se.points))
		for i, p := range se.points {
			xs[i], ys[i] = px(p.Elapsed.Seconds()), py(p.OpsPerSec)
		}
		if len(se.points) > 1 {
			s.polyline(xs, ys, c, w)
		}
		// Points carry tooltips; past a few dozen they would only clutter.
		if len(se.points) <= 60 {
			r := 2.25
			if len(se.points) == 1 {
				r = 3.5
			}
			for i, p := range se.points {
				s.circle(xs[i], ys[i], r, c, se.engine+" at "+fmtElapsed(p.Elapsed)+": "+fmtCompact(p.OpsPerSec)+" "+unit)
			}
		}
	}
	return s.html()
}

// strataLast returns items with Strata's (and its variants') moved to the
// end, keeping the order otherwise, so that they are drawn on top.
func strataLast[T any](items []T, engine func(T) string) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		if !isStrata(engine(it)) {
			out = append(out, it)
		}
	}
	for _, it := range items {
		if isStrata(engine(it)) {
			out = append(out, it)
		}
	}
	return out
}

// roundLine is one engine's values per overwrite round; dashed lines are a
// second measure of the same engine (space amplification before settling).
type roundLine struct {
	engine string
	rounds []int
	values []float64
	// lo and hi, parallel to values when set, are the minimum and maximum
	// over repeated runs (values are medians): drawn as whiskers.
	lo, hi []float64
	dashed bool
	what   string // for tooltips: what a dashed value is
}

// add appends a round's value, with its spread when it has one.
func (l *roundLine) add(round int, value float64, spread bench.Range, hasSpread bool) {
	l.rounds, l.values = append(l.rounds, round), append(l.values, value)
	if hasSpread {
		for len(l.lo) < len(l.values)-1 {
			l.lo, l.hi = append(l.lo, 0), append(l.hi, 0)
		}
		l.lo, l.hi = append(l.lo, spread.Min), append(l.hi, spread.Max)
	}
}

// roundChart draws values per overwrite round: the rounds as evenly spaced
// categories on the x axis, a line per engine (solid, and dashed for a
// second measure), with a legend of the engines above. format writes a
// value for tooltips.
func roundChart(title, unit string, lines []roundLine, colors map[string]string, format func(float64) string) template.HTML {
	return stepChart(title, unit, "round", lines, colors, format)
}

// stepChart is roundChart with the x axis's steps called xLabel (rounds,
// checkpoints) instead of rounds.
func stepChart(title, unit, xLabel string, lines []roundLine, colors map[string]string, format func(float64) string) template.HTML {
	var names, cols []string
	maxRound, maxY := 0, 0.0
	points := 0
	for _, l := range lines {
		if len(l.rounds) == 0 {
			continue
		}
		if !l.dashed && !slices.Contains(names, l.engine) {
			names = append(names, l.engine)
			cols = append(cols, colors[l.engine])
		}
		for i, r := range l.rounds {
			maxRound = max(maxRound, r)
			maxY = max(maxY, finite(l.values[i]))
			if i < len(l.hi) {
				maxY = max(maxY, finite(l.hi[i]))
			}
			points++
		}
	}
	if points == 0 {
		return placeholder("no " + xLabel + "s measured")
	}
	const (
		left   = 52.0
		right  = 18.0
		bottom = 38.0
		plotH  = 190.0
	)
	legend := layoutLegend(names, chartWidth-left-right)
	top := 8 + legend.height + 22
	s := newSVG(chartWidth, top+plotH+bottom, title)
	s.legend(left, 8, legend, cols, isStrata)
	plotW := chartWidth - left - right

	yTop, yTicks := niceTicks(maxY, 4)
	px := func(round int) float64 { return left + plotW*(float64(round)-0.5)/float64(maxRound) }
	py := func(v float64) float64 { return top + plotH - plotH*max(finite(v), 0)/yTop }
	for _, t := range yTicks {
		y := py(t)
		s.line(left, y, left+plotW, y, "#e4e4e7", 1)
		s.text(left-6, y+4, "end", "tick", fmtCompact(t))
	}
	s.text(left-6, top-10, "end", "tick", unit)
	step := max(1, (maxRound+11)/12) // at most about 12 labels
	for r := 1; r <= maxRound; r++ {
		x := px(r)
		s.line(x, top+plotH, x, top+plotH+4, "#52525b", 1)
		// Every step-th label and the last, unless the last would crowd
		// the one before it.
		if ((r-1)%step == 0 && (r == maxRound || maxRound-r >= (step+1)/2)) || r == maxRound {
			s.text(x, top+plotH+16, "middle", "tick", strconv.Itoa(r))
		}
	}
	s.text(left+plotW, top+plotH+32, "end", "tick", xLabel)
	s.line(left, top+plotH, left+plotW, top+plotH, "#52525b", 1)
	s.line(left, top, left, top+plotH, "#52525b", 1)

	for _, l := range strataLast(lines, func(l roundLine) string { return l.engine }) {
		if len(l.rounds) == 0 {
			continue
		}
		c := colors[l.engine]
		w := 1.75
		if isStrata(l.engine) {
			w = 2.75
		}
		xs := make([]float64, len(l.rounds))
		ys := make([]float64, len(l.rounds))
		for i, r := range l.rounds {
			xs[i], ys[i] = px(r), py(l.values[i])
		}
		if len(xs) > 1 {
			dash := ""
			if l.dashed {
				dash, w = "5 4", w*0.7
			}
			s.polylineDash(xs, ys, c, w, dash)
		}
		r := 3.0
		if l.dashed {
			r = 2.0
		}
		for i, round := range l.rounds {
			tip := l.engine + " " + xLabel + " " + strconv.Itoa(round) + ": " + format(l.values[i])
			if l.what != "" {
				tip += " (" + l.what + ")"
			}
			if i < len(l.hi) && finite(l.hi[i]) > finite(l.lo[i]) {
				y0, y1 := py(l.lo[i]), py(l.hi[i])
				s.line(xs[i], y0, xs[i], y1, c, 1.25)
				s.line(xs[i]-3, y0, xs[i]+3, y0, c, 1.25)
				s.line(xs[i]-3, y1, xs[i]+3, y1, c, 1.25)
				tip += "; runs " + format(l.lo[i]) + " to " + format(l.hi[i])
			}
			s.circle(xs[i], ys[i], r, c, tip)
		}
	}
	return s.html()
}

// ratioColor shades a ratio cell: green when Strata is faster, red when
// slower, stronger the further from 1 (full at 4x either way).
func ratioColor(ratio float64) string {
	ratio = finite(ratio)
	if ratio <= 0 {
		return "#ffffff"
	}
	d := math.Log2(ratio) / 2
	d = max(min(d, 1), -1)
	green := [3]float64{0x5c, 0xb8, 0x5c}
	red := [3]float64{0xe0, 0x5a, 0x4f}
	target := green
	if d < 0 {
		target, d = red, -d
	}
	a := 0.15 + 0.6*d
	var out [3]int
	for i := range out {
		out[i] = int(math.Round(255*(1-a) + target[i]*a))
	}
	return "#" + hex2(out[0]) + hex2(out[1]) + hex2(out[2])
}

func hex2(v int) string {
	const digits = "0123456789abcdef"
	v = max(min(v, 255), 0)
	return string([]byte{digits[v>>4], digits[v&15]})
}

// pctLine is one engine's latency at each percentile of latencyPercentiles,
// with the minimum and maximum over repeated runs (lo, hi nil for one run).
type pctLine struct {
	engine string
	values []float64 // nanoseconds; 0 where not measured
	lo, hi []float64
}

// latencyPercentiles name the percentiles of a latency chart, in the order
// of pctLine values.
var latencyPercentiles = []string{"p50", "p95", "p99", "p99.9"}

// latencyChart draws each engine's latency percentiles, the percentiles as
// evenly spaced categories and the latency on a logarithmic axis (tails
// are often 100 times the median), a line per engine, whiskers for the
// spread over repeated runs.
func latencyChart(title string, lines []pctLine, colors map[string]string) template.HTML {
	var names, cols []string
	lo, hi := math.Inf(1), 0.0
	for _, l := range lines {
		measured := false
		for i, v := range l.values {
			if v = finite(v); v > 0 {
				measured = true
				lo, hi = min(lo, v), max(hi, v)
				if l.lo != nil && finite(l.lo[i]) > 0 {
					lo = min(lo, l.lo[i])
				}
				if l.hi != nil {
					hi = max(hi, finite(l.hi[i]))
				}
			}
		}
		if measured {
			names = append(names, l.engine)
			cols = append(cols, colors[l.engine])
		}
	}
	if len(names) == 0 {
		return placeholder("no latencies measured")
	}
	const (
		left   = 52.0
		right  = 18.0
		bottom = 38.0
		plotH  = 190.0
	)
	legend := layoutLegend(names, chartWidth-left-right)
	top := 8 + legend.height + 22
	s := newSVG(chartWidth, top+plotH+bottom, title)
	s.legend(left, 8, legend, cols, isStrata)
	plotW := chartWidth - left - right

	// Decades of nanoseconds around the data.
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	py := func(v float64) float64 {
		return top + plotH - plotH*(math.Log10(max(finite(v), 1))-dLo)/(dHi-dLo)
	}
	n := len(latencyPercentiles)
	px := func(i int) float64 { return left + plotW*(float64(i)+0.5)/float64(n) }
	for d := dLo; d <= dHi; d++ {
		y := py(math.Pow(10, d))
		s.line(left, y, left+plotW, y, "#e4e4e7", 1)
		s.text(left-6, y+4, "end", "tick", fmtDecade(d))
		if d < dHi {
			for _, m := range []float64{2, 5} { // minor grid lines
				y := py(m * math.Pow(10, d))
				s.line(left, y, left+plotW, y, "#f4f4f5", 1)
			}
		}
	}
	for i, p := range latencyPercentiles {
		x := px(i)
		s.line(x, top+plotH, x, top+plotH+4, "#52525b", 1)
		s.text(x, top+plotH+16, "middle", "tick", p)
	}
	s.text(left+plotW, top+plotH+32, "end", "tick", "percentile (log scale)")
	s.line(left, top+plotH, left+plotW, top+plotH, "#52525b", 1)
	s.line(left, top, left, top+plotH, "#52525b", 1)

	for _, l := range strataLast(lines, func(l pctLine) string { return l.engine }) {
		c := colors[l.engine]
		w := 1.75
		if isStrata(l.engine) {
			w = 2.75
		}
		var xs, ys []float64
		for i, v := range l.values {
			if finite(v) <= 0 {
				continue
			}
			xs, ys = append(xs, px(i)), append(ys, py(v))
		}
		if len(xs) > 1 {
			s.polyline(xs, ys, c, w)
		}
		for i, v := range l.values {
			if finite(v) <= 0 {
				continue
			}
			x := px(i)
			tip := l.engine + " " + latencyPercentiles[i] + ": " + fmtLatency(time.Duration(v))
			if l.hi != nil && finite(l.hi[i]) > finite(l.lo[i]) {
				y0, y1 := py(l.lo[i]), py(l.hi[i])
				s.line(x, y0, x, y1, c, 1.25)
				s.line(x-3, y0, x+3, y0, c, 1.25)
				s.line(x-3, y1, x+3, y1, c, 1.25)
				tip += " (runs: " + fmtLatency(time.Duration(l.lo[i])) + "-" + fmtLatency(time.Duration(l.hi[i])) + ")"
			}
			s.circle(x, py(v), 3, c, tip)
		}
	}
	return s.html()
}

// fmtDecade writes 10^d nanoseconds for an axis: 1ns, 10µs, 100ms, 1s.
func fmtDecade(d float64) string {
	units := []string{"ns", "µs", "ms", "s"}
	i := min(max(int(d)/3, 0), len(units)-1)
	return strconv.FormatFloat(math.Pow(10, d-float64(3*i)), 'f', -1, 64) + units[i]
}
