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
// ! marked for compaction.
var fileRE = regexp.MustCompile(`^(\d+)\[([^-\]]+)-([^\]]+)\](?::([0-9.]+[KMG]?))?([*!]*)$`)

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
				t.Fatalf("bad file %q: want <num>[<smallest>-<largest>][:<size>][*!]", f)
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

// fmtPick prints a pick: a header, the inputs of each level, and the
// grandparents if any.
func fmtPick(v *manifest.Version, p *Pick) string {
	if p == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "L%d->L%d (%s) score %.2f", p.Level, p.OutputLevel, p.Reason, p.Score)
	if IsBottommost(v, p) {
		b.WriteString(", bottommost")
	}
	b.WriteString("\n")
	for i, files := range p.Inputs {
		level := p.Level
		if i == 1 {
			level = p.OutputLevel
		}
		if len(files) > 0 {
			fmt.Fprintf(&b, "  L%d: %s\n", level, fmtFiles(files))
		}
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
//	define                     build the version from the input; prints its State
//	pick-auto [busy=<levels>]  PickAuto, with the comma-separated levels busy
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
		return fmtPick(pt.v, PickAuto(pt.v, pt.opts, busy))
	default:
		t.Fatalf("%s: unknown command %q", c.pos, c.name)
		return ""
	}
}

// TestPickAuto pins the automatic picker's decisions: level sizing and
// scores (the output of define) and the compaction chosen.
func TestPickAuto(t *testing.T) {
	pt := &pickerTest{opts: PickerOptions{}.EnsureDefaults()}
	runTestdata(t, "testdata/pick_auto", pt.run)
}

func TestGrandparentsAndBottommost(t *testing.T) {
	v := parseVersion(t, `L4: 1[c-d]:10M
	                      L5: 2[a-b]:10M 3[c-e]:10M 4[f-g]:10M
	                      L6: 5[d-z]:10M`)
	p := &Pick{Level: 4, OutputLevel: 5, Inputs: [2][]*manifest.FileMetadata{v.Levels[4], {v.Levels[5][1]}}}
	require.Equal(t, []*manifest.FileMetadata{v.Levels[6][0]}, grandparents(v, p))
	require.False(t, IsBottommost(v, p))
	p2 := &Pick{Level: 5, OutputLevel: 6, Inputs: [2][]*manifest.FileMetadata{{v.Levels[5][0]}}}
	require.True(t, IsBottommost(v, p2))
}
