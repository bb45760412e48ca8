package gc

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/")

// The files in testdata/ pin the policies' decisions as readable tables.
// Each case is
//
//	define
//	table <num> L<level> size=<bytes> [refs=<vlog>:<bytes>:<pointers>,...]
//	vlog <num> records=<bytes> [pinned] [collecting] [draining] [object=<name>]
//	instance <id>
//	decide <policy> [ratio=] [foreign-ratio=] [max-amp=] [budget=] [in-flight=]
//	----
//	<the decision>
//
// where a define block sets the version for the decide blocks after it.
// Run with -rewrite to regenerate the expected outputs after a deliberate
// change, and read the diff.
func TestPolicies(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) { runDataFile(t, path) })
	}
}

type testEnv struct {
	v     *manifest.Version
	state map[base.FileNum]Status
}

func runDataFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out strings.Builder
	var env testEnv
	blocks := strings.Split(string(data), "\n\n")
	for _, block := range blocks {
		block = strings.Trim(block, "\n")
		if block == "" {
			continue
		}
		cmd, _, _ := strings.Cut(block, "\n----")
		cmd = strings.TrimRight(cmd, "\n")
		lines := strings.Split(cmd, "\n")
		var comments []string
		for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
			comments = append(comments, lines[0])
			lines = lines[1:]
		}
		for _, c := range comments {
			out.WriteString(c + "\n")
		}
		switch {
		case len(lines) > 0 && lines[0] == "define":
			env = define(t, lines[1:])
			out.WriteString(strings.Join(lines, "\n") + "\n\n")
		case len(lines) > 0 && strings.HasPrefix(lines[0], "decide"):
			got := decide(t, env, lines[0])
			fmt.Fprintf(&out, "%s\n----\n%s\n", lines[0], got)
		case len(lines) == 0:
			out.WriteString("\n")
		default:
			t.Fatalf("%s: unknown command %q", path, lines[0])
		}
	}
	if *rewrite {
		require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
		return
	}
	require.Equal(t, string(data), out.String(), "decisions changed; run with -rewrite and read the diff")
}

func num(t *testing.T, s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, s)
	return n
}

func define(t *testing.T, lines []string) testEnv {
	env := testEnv{state: map[base.FileNum]Status{}}
	ve := &manifest.VersionEdit{}
	key := 0
	for _, line := range lines {
		f := strings.Fields(line)
		switch f[0] {
		case "table":
			level := int(num(t, strings.TrimPrefix(f[2], "L")))
			m := &manifest.FileMetadata{FileNum: base.FileNum(num(t, f[1])), VlogRefsKnown: true}
			for _, kv := range f[3:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "size":
					m.Size = num(t, v)
				case "refs":
					for _, r := range strings.Split(v, ",") {
						p := strings.Split(r, ":")
						m.VlogRefs = append(m.VlogRefs, manifest.VlogRef{FileNum: base.FileNum(num(t, p[0])), Bytes: num(t, p[1]), Pointers: num(t, p[2])})
					}
				case "unknown-refs":
					m.VlogRefsKnown = false
				}
			}
			// Disjoint key ranges in file order, so any level accepts them.
			m.Smallest = base.MakeInternalKey([]byte(fmt.Sprintf("k%04d", key)), 1, base.KindSet)
			m.Largest = base.MakeInternalKey([]byte(fmt.Sprintf("k%04d", key+1)), 1, base.KindSet)
			m.SmallestSeq, m.LargestSeq = 1, 1
			key += 2
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: level, Meta: m})
		case "vlog":
			n := base.FileNum(num(t, f[1]))
			m := &manifest.VlogMetadata{FileNum: n}
			var st Status
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "records":
					m.Size = num(t, v) + vlog.HeaderLen + vlog.FooterLen
				case "pinned":
					st.Pinned = true
				case "collecting":
					st.Collecting = true
				case "draining":
					st.Collecting, st.Draining = true, true
				case "object":
					ve.SharedFiles = append(ve.SharedFiles, manifest.SharedFile{Vlog: true, FileNum: n, Ref: manifest.SharedRef{Object: v}})
				}
			}
			env.state[n] = st
			ve.NewVlogs = append(ve.NewVlogs, m)
		case "instance":
			ve.InstanceID = f[1]
		default:
			t.Fatalf("define: unknown line %q", line)
		}
	}
	v, err := manifest.Apply(nil, ve)
	require.NoError(t, err)
	env.v = v
	return env
}

func decide(t *testing.T, env testEnv, line string) string {
	f := strings.Fields(line)
	require.GreaterOrEqual(t, len(f), 2, line)
	p, err := ByName(f[1])
	require.NoError(t, err)
	for _, kv := range f[2:] {
		k, v, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, kv)
		switch pp := p.(type) {
		case *ReverseLookupPolicy:
			switch k {
			case "ratio":
				pp.Ratio = x
			case "foreign-ratio":
				pp.ForeignRatio = x
			case "max-amp":
				pp.MaxSpaceAmp = x
			case "in-flight":
				pp.MaxInFlight = int(x)
			}
		case *RewritePolicy:
			switch k {
			case "ratio":
				pp.Ratio = x
			case "foreign-ratio":
				pp.ForeignRatio = x
			case "max-amp":
				pp.MaxSpaceAmp = x
			case "in-flight":
				pp.MaxInFlight = int(x)
			}
		case *CostPolicy:
			switch k {
			case "budget":
				pp.Budget = x
			case "in-flight":
				pp.MaxInFlight = int(x)
			}
		}
	}
	l := NewLedger(env.v, func(n base.FileNum) Status { return env.state[n] })
	d := p.Decide(env.v, l)
	var b strings.Builder
	fmt.Fprintf(&b, "space amp %.2f\n", l.SpaceAmp())
	for _, n := range d.Delete {
		fmt.Fprintf(&b, "delete %s\n", n)
	}
	for _, c := range d.Collect {
		var tables []string
		for _, tr := range c.Tables {
			tables = append(tables, fmt.Sprintf("L%d:%s", tr.Level, tr.File.FileNum))
		}
		lf, _ := l.File(c.FileNum)
		foreign := ""
		if lf.Foreign {
			foreign = ", foreign"
		}
		fmt.Fprintf(&b, "collect %s (garbage %.0f%%%s) by %s: frees %d, writes %d, tables %s\n",
			c.FileNum, 100*lf.GarbageRatio(), foreign, c.Mechanism, c.Frees, c.Writes, strings.Join(tables, " "))
	}
	if d.CompactL0 {
		b.WriteString("compact L0\n")
	}
	if d.Empty() {
		b.WriteString("nothing\n")
	}
	return b.String()
}

// TestReverseIndexExact: the reverse index lists every table whose
// references name the value log, and only those.
func TestReverseIndexExact(t *testing.T) {
	env := define(t, []string{
		"table 10 L0 size=100 refs=1:50:1,2:70:2",
		"table 11 L6 size=100 refs=2:30:1",
		"table 12 L6 size=100",
		"vlog 1 records=50",
		"vlog 2 records=200",
		"vlog 3 records=10",
	})
	idx := ReverseIndex(env.v, map[base.FileNum]bool{1: true, 2: true, 3: true})
	names := func(n base.FileNum) (out []string) {
		for _, r := range idx[n] {
			out = append(out, fmt.Sprintf("L%d:%s:%d", r.Level, r.File.FileNum, r.Bytes))
		}
		return out
	}
	require.Equal(t, []string{"L0:000010:50"}, names(1))
	require.Equal(t, []string{"L0:000010:70", "L6:000011:30"}, names(2))
	require.Empty(t, names(3))
	l := NewLedger(env.v, nil)
	f2, _ := l.File(2)
	require.Equal(t, uint64(100), f2.Live)
	require.Equal(t, uint64(3), f2.Pointers)
	require.InDelta(t, 0.5, f2.GarbageRatio(), 1e-9)
}
