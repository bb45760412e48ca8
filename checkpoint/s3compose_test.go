package checkpoint

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanS3Parts: which parts of a composition the server copies and
// which are sent, as a table. Parts are written "o:N" (a stored range of
// N MiB), "r:N" (N MiB from a reader) or "o:Nb" / "r:Nb" (N bytes); the
// plan as "copy N" or "send a+b+...".
func TestPlanS3Parts(t *testing.T) {
	const mib = 1 << 20
	parse := func(spec string) []Part {
		var ps []Part
		for _, f := range strings.Fields(spec) {
			kind, n, _ := strings.Cut(f, ":")
			var size int64
			if b, ok := strings.CutSuffix(n, "b"); ok {
				n, err := strconv.Atoi(b)
				require.NoError(t, err)
				size = int64(n)
			} else {
				m, err := strconv.Atoi(n)
				require.NoError(t, err)
				size = int64(m) * mib
			}
			p := Part{Object: "o", Length: size}
			if kind == "r" {
				p = Part{R: strings.NewReader(""), Length: size}
			}
			ps = append(ps, p)
		}
		return ps
	}
	show := func(plan []s3Part) string {
		var out []string
		for _, p := range plan {
			if p.copy != nil {
				out = append(out, "copy "+strconv.FormatInt(p.size/mib, 10))
				continue
			}
			var s []string
			for _, q := range p.send {
				if q.Length%mib == 0 {
					s = append(s, strconv.FormatInt(q.Length/mib, 10))
				} else {
					s = append(s, strconv.FormatInt(q.Length, 10)+"b")
				}
			}
			out = append(out, "send "+strings.Join(s, "+"))
		}
		return strings.Join(out, ", ")
	}
	for _, c := range []struct{ parts, plan string }{
		{"o:5 o:8", "copy 5, copy 8"},
		{"o:4", "send 4"},
		{"o:6 o:4 o:6", "copy 6, send 4+6"},             // 4 MiB may not stand alone before a copy
		{"o:6 o:3 o:3 o:6", "copy 6, send 3+3, copy 6"}, // 6 MiB pending may
		{"r:1 o:6", "send 1+6"},
		{"r:5 o:6 o:10b", "send 5, copy 6, send 10b"},
		{"o:6 r:10b o:1 o:20b", "copy 6, send 10b+1+20b"},
		{"o:6144", "copy 5120, copy 1024"}, // above the 5 GiB maximum part
		{"", ""},
	} {
		require.Equal(t, c.plan, show(planS3Parts(parse(c.parts))), "parts %q", c.parts)
	}
}
