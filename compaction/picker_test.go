package compaction

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/stretchr/testify/require"
)

// fileRE matches a file of a version description: number, [smallest-largest]
// user keys, an optional :size (default 1M) and flags: * being compacted,
// ! marked for compaction, ~ virtual.
var fileRE = regexp.MustCompile(`^(\d+)\[([^-\]]+)-([^\]]+)\](?::([0-9.]+[KMG]?))?([*!~]*)$`)

// parseVersion builds a version from one line per level:
//
//	L0: 1[a-c]:10M 2[b-d]:10M
//	L6: 3[a-z]:500M*
//
// Files get increasing sequence numbers in the order written, so L0 files
// are listed oldest first.
func parseVersion(t *testing.T, desc string) *manifest.Version {
	t.Helper()
	ve := &manifest.VersionEdit{}
	seq := base.SeqNum(1)
	for _, line := range strings.Split(desc, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		head, files, ok := strings.Cut(line, ":")
		level, err := strconv.Atoi(strings.TrimPrefix(head, "L"))
		if !ok || !strings.HasPrefix(head, "L") || err != nil || level < 0 || level >= manifest.NumLevels {
			t.Fatalf("bad level line %q: want L<level>: <files>", line)
		}
		for _, f := range strings.Fields(files) {
			m := fileRE.FindStringSubmatch(f)
			if m == nil {
				t.Fatalf("bad file %q: want <num>[<smallest>-<largest>][:<size>][*!~]", f)
			}
			num, _ := strconv.Atoi(m[1])
			size := uint64(1 << 20)
			if m[4] != "" {
				size = parseSize(t, m[4])
			}
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: level, Meta: &manifest.FileMetadata{
				FileNum:             base.FileNum(num),
				Size:                size,
				Smallest:            base.MakeInternalKey([]byte(m[2]), seq, base.KindSet),
				Largest:             base.MakeInternalKey([]byte(m[3]), seq, base.KindSet),
				SmallestSeq:         seq,
				LargestSeq:          seq,
				Compacting:          strings.Contains(m[5], "*"),
				MarkedForCompaction: strings.Contains(m[5], "!"),
				Virtual:             strings.Contains(m[5], "~"),
			}})
			seq++
		}
	}
	v, err := manifest.Apply(nil, ve)
	require.NoError(t, err)
	return v
}

// parseSize reads a size such as 512K, 10M, 1.5G or 4096 (bytes).
func parseSize(t *testing.T, s string) uint64 {
	t.Helper()
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "K"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"):
		mult = 1 << 30
	}
	n, err := strconv.ParseFloat(strings.TrimRight(s, "KMG"), 64)
	if err != nil {
		t.Fatalf("bad size %q", s)
	}
	return uint64(n * mult)
}

// fmtSize prints bytes in MiB, with one decimal unless whole.
func fmtSize(n uint64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%dM", n>>20)
	}
	return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
}

// parseOptions reads picker options from a command's arguments.
func parseOptions(t *testing.T, c *testCmd) PickerOptions {
	t.Helper()
	var o PickerOptions
	for _, a := range c.args {
		switch a.key {
		case "l0-threshold":
			o.L0CompactionThreshold, _ = strconv.Atoi(a.value)
		case "lbase":
			o.LBaseMaxBytes = int64(parseSize(t, a.value))
		case "multiplier":
			o.LevelMultiplier, _ = strconv.Atoi(a.value)
		case "target":
			o.TargetFileSize = int64(parseSize(t, a.value))
		case "overlap-factor":
			o.MaxGrandparentOverlapFactor, _ = strconv.Atoi(a.value)
		default:
			t.Fatalf("%s: unknown option %q", c.pos, a.key)
		}
	}
	return o.EnsureDefaults()
}

func fmtOptions(o PickerOptions) string {
	return fmt.Sprintf("l0-threshold=%d lbase=%s multiplier=%d target=%s overlap-factor=%d",
		o.L0CompactionThreshold, fmtSize(uint64(o.LBaseMaxBytes)), o.LevelMultiplier,
		fmtSize(uint64(o.TargetFileSize)), o.MaxGrandparentOverlapFactor)
}

// fmtState prints the base level, then each level with data or a target:
// its size, its target and its score (the bottom level has none).
func fmtState(s State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "base L%d\n", s.BaseLevel)
	for level, l := range s.Levels {
		compacting := ""
		if l.Compact > 0 {
			compacting = fmt.Sprintf(" (%s compacting)", fmtSize(l.Compact))
		}
		switch {
		case level == 0:
			if l.FileCount > 0 {
				files := "files"
				if l.FileCount == 1 {
					files = "file"
				}
				fmt.Fprintf(&b, "L0: %d %s %s%s, score %.2f\n", l.FileCount, files, fmtSize(l.Bytes), compacting, l.Score)
			}
		case l.MaxBytes == math.MaxInt64:
			if l.Bytes > 0 {
				fmt.Fprintf(&b, "L%d: %s%s, no target\n", level, fmtSize(l.Bytes), compacting)
			}
		case level == manifest.NumLevels-1:
			fmt.Fprintf(&b, "L%d: %s of %s%s\n", level, fmtSize(l.Bytes), fmtSize(uint64(l.MaxBytes)), compacting)
		default:
			fmt.Fprintf(&b, "L%d: %s of %s%s, score %.2f\n", level, fmtSize(l.Bytes), fmtSize(uint64(l.MaxBytes)), compacting, l.Score)
		}
	}
	return b.String()
}

func fmtFiles(files []*manifest.FileMetadata) string {
	var parts []string
	for _, f := range files {
		parts = append(parts, fmt.Sprintf("%d[%s-%s]", f.FileNum, f.Smallest.UserKey, f.Largest.UserKey))
	}
	return strings.Join(parts, " ")
}

// fmtPick prints a pick: a header (kind, levels, reason, score and whether
// it is bottommost), the inputs of each level, and the grandparents if any.
func fmtPick(p *Pick) string {
	if p == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s L%d->L%d", p.Kind, p.Level, p.OutputLevel)
	if p.Reason != ReasonNone {
		fmt.Fprintf(&b, " (%s)", p.Reason)
	}
	if p.Kind != KindManual {
		fmt.Fprintf(&b, " score %.2f", p.Score)
	}
	if p.Bottommost {
		b.WriteString(", bottommost")
	}
	b.WriteString("\n")
	for _, in := range p.Inputs {
		fmt.Fprintf(&b, "  L%d: %s\n", in.Level, fmtFiles(in.Files))
	}
	if len(p.Grandparents) > 0 {
		fmt.Fprintf(&b, "  grandparents: %s\n", fmtFiles(p.Grandparents))
	}
	return b.String()
}

// pickerTest runs the commands of the picker's testdata files against one
// version and one set of options at a time:
//
//	options <key>=<value>...   set the options (see parseOptions); prints them
//	define [quiet]             build the version from the input; prints its State
//	                           unless quiet
//	pick-auto [busy=<levels>]  PickAuto, with the comma-separated levels busy
//	pick-manual [start=<key>] [end=<key>]
//	                           PickManual; a bound not given is open
//	debt                       Debt
type pickerTest struct {
	opts PickerOptions
	v    *manifest.Version
}

func (pt *pickerTest) run(t *testing.T, c *testCmd) string {
	switch c.name {
	case "options":
		pt.opts = parseOptions(t, c)
		return fmtOptions(pt.opts)
	case "define":
		pt.v = parseVersion(t, c.input)
		if _, ok := c.arg("quiet"); ok {
			return ""
		}
		return fmtState(Compute(pt.v, pt.opts))
	case "pick-auto":
		var busy Busy
		if s, ok := c.arg("busy"); ok {
			for _, l := range strings.Split(s, ",") {
				level, err := strconv.Atoi(l)
				require.NoError(t, err, c.pos)
				busy[level] = true
			}
		}
		return fmtPick(PickAuto(pt.v, pt.opts, busy))
	case "pick-manual":
		var start, end []byte
		if s, ok := c.arg("start"); ok {
			start = []byte(s)
		}
		if s, ok := c.arg("end"); ok {
			end = []byte(s)
		}
		return fmtPick(PickManual(pt.v, start, end))
	case "debt":
		return fmt.Sprintf("debt %s", fmtSize(Debt(pt.v, pt.opts)))
	default:
		t.Fatalf("%s: unknown command %q", c.pos, c.name)
		return ""
	}
}

func newPickerTest() *pickerTest {
	return &pickerTest{opts: PickerOptions{}.EnsureDefaults()}
}

// TestPickAuto pins the automatic picker's decisions: level sizing and
// scores (the output of define) and the compaction chosen.
func TestPickAuto(t *testing.T) {
	runTestdata(t, "testdata/pick_auto", newPickerTest().run)
}

// TestTrivialMove pins when PickAuto moves a file down instead of
// rewriting it.
func TestTrivialMove(t *testing.T) {
	runTestdata(t, "testdata/trivial_move", newPickerTest().run)
}

// TestPickManual pins which files a manual compaction of a key range takes:
// the closure of the files overlapping it across all levels.
func TestPickManual(t *testing.T) {
	runTestdata(t, "testdata/pick_manual", newPickerTest().run)
}

// TestDebt pins the compaction debt the write path stalls on.
func TestDebt(t *testing.T) {
	runTestdata(t, "testdata/debt", newPickerTest().run)
}

// TestKindsAndReasons pins the names of kinds and reasons: they appear in
// logs, and a reason's name is CompactionInfo.Reason, a public field.
func TestKindsAndReasons(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		want string
	}{
		{KindAuto, "auto"},
		{KindManual, "manual"},
		{KindMove, "move"},
		{KindRewrite, "rewrite"},
		{Kind(-1), "kind(-1)"},
		{numKinds, fmt.Sprintf("kind(%d)", int(numKinds))},
	} {
		require.Equal(t, tc.want, tc.kind.String())
	}
	for _, tc := range []struct {
		reason Reason
		want   string
	}{
		{ReasonNone, ""},
		{ReasonL0Files, "L0 files"},
		{ReasonLevelSize, "level size"},
		{ReasonMarked, "marked"},
		{numReasons, fmt.Sprintf("reason(%d)", int(numReasons))},
	} {
		require.Equal(t, tc.want, tc.reason.String())
	}
}

// TestPickString pins the one-line description of a pick used in logs.
func TestPickString(t *testing.T) {
	v := parseVersion(t, `L5: 20[a-c]:40M 21[d-f]:40M 22[g-k]:40M
	                      L6: 10[a-c]:150M 11[d-e]:20M 12[f-f]:10M 13[g-m]:120M`)
	p := PickAuto(v, PickerOptions{LBaseMaxBytes: 64 << 20}, Busy{})
	require.Equal(t, "auto L5->L6 (level size) score 1.88: L5 21 + L6 11 12", p.String())
	require.Equal(t, "manual L0->L6: L5 20 + L6 10", PickManual(v, []byte("b"), []byte("b")).String())
}

func TestGrandparentsAndBottommost(t *testing.T) {
	v := parseVersion(t, `L4: 1[c-d]:10M
	                      L5: 2[a-b]:10M 3[c-e]:10M 4[f-g]:10M
	                      L6: 5[d-z]:10M`)
	p := &Pick{Level: 4, OutputLevel: 5, Inputs: []LevelFiles{{4, v.Levels[4]}, {5, v.Levels[5][1:2]}}}
	require.Equal(t, []*manifest.FileMetadata{v.Levels[6][0]}, grandparents(v, p))
	require.False(t, IsBottommost(v, p))
	p2 := &Pick{Level: 5, OutputLevel: 6, Inputs: []LevelFiles{{5, v.Levels[5][:1]}}}
	require.True(t, IsBottommost(v, p2))
}
