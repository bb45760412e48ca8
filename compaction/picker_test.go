package compaction

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/stretchr/testify/require"
)

// buildVersion parses a tree description, one level per line:
//
//	L0 1:a-c:10 2:b-d:10
//	L6 3:a-z:500*
//
// Each file is num:smallest-largest:sizeMiB; a trailing * marks the file as
// being compacted, a trailing ! marks it for compaction. L0 files get
// increasing sequence numbers in the order written.
func buildVersion(t *testing.T, desc string) *manifest.Version {
	t.Helper()
	ve := &manifest.VersionEdit{}
	seq := base.SeqNum(1)
	for _, line := range strings.Split(strings.TrimSpace(desc), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		level, err := strconv.Atoi(strings.TrimPrefix(fields[0], "L"))
		require.NoError(t, err)
		for _, f := range fields[1:] {
			compacting := strings.HasSuffix(f, "*")
			marked := strings.HasSuffix(f, "!")
			f = strings.TrimRight(f, "*!")
			parts := strings.Split(f, ":")
			require.Len(t, parts, 3, f)
			num, err := strconv.Atoi(parts[0])
			require.NoError(t, err)
			lo, hi, _ := strings.Cut(parts[1], "-")
			mib, err := strconv.ParseFloat(parts[2], 64)
			require.NoError(t, err)
			m := &manifest.FileMetadata{
				FileNum:             base.FileNum(num),
				Size:                uint64(mib * (1 << 20)),
				Smallest:            base.MakeInternalKey([]byte(lo), seq, base.KindSet),
				Largest:             base.MakeInternalKey([]byte(hi), seq, base.KindSet),
				SmallestSeq:         seq,
				LargestSeq:          seq,
				Compacting:          compacting,
				MarkedForCompaction: marked,
			}
			seq++
			ve.NewFiles = append(ve.NewFiles, manifest.NewFile{Level: level, Meta: m})
		}
	}
	v, err := manifest.Apply(nil, ve)
	require.NoError(t, err)
	return v
}

func formatState(s State) string {
	var parts []string
	for level, l := range s.Levels {
		if level > 0 && l.MaxBytes == 0 {
			continue
		}
		target := "-"
		if level > 0 && l.MaxBytes < 1<<62 {
			target = fmt.Sprintf("%.0fM", float64(l.MaxBytes)/(1<<20))
		}
		if l.Bytes == 0 && target == "-" {
			continue
		}
		parts = append(parts, fmt.Sprintf("L%d %.0fM/%s %.2f", level, float64(l.Bytes)/(1<<20), target, l.Score))
	}
	return fmt.Sprintf("base L%d; %s", s.BaseLevel, strings.Join(parts, "; "))
}

// TestPicker pins the picker's decisions for hand-built trees. Each row:
// the tree, the level sizes/targets/scores it computes, and the compaction
// it picks ("none" when nothing needs compacting). Options: 4 L0 files make
// a score of 1, base level target 64 MiB, multiplier 10.
func TestPicker(t *testing.T) {
	opts := PickerOptions{L0CompactionThreshold: 4, LBaseMaxBytes: 64 << 20, LevelMultiplier: 10, TargetFileSize: 8 << 20}
	for _, tc := range []struct {
		name, tree string
		busy       []int
		state      string
		pick       string
	}{{
		name:  "an empty tree compacts L0 straight into the bottom",
		tree:  "L0 1:a-c:10 2:b-d:10 3:a-z:10 4:c-f:10",
		state: "base L6; L0 40M/- 1.00",
		pick:  "L0->L6 score 1.00 (L0 files): 1 2 3 4 +",
	}, {
		name:  "three L0 files are not enough",
		tree:  "L0 1:a-c:10 2:b-d:10 3:a-z:10",
		state: "base L6; L0 30M/- 0.75",
		pick:  "none",
	}, {
		name:  "while the bottom level fits the base target it is the only level under L0",
		tree:  "L0 1:a-c:5 2:b-d:5 3:a-b:5 4:x-z:5 5:e-f:5\nL6 10:a-f:10 11:g-m:10 12:n-z:10",
		state: "base L6; L0 25M/- 1.25; L6 30M/64M 0.00",
		pick:  "L0->L6 score 1.25 (L0 files): 1 2 3 4 5 + 10 11 12",
	}, {
		name:  "past that, the base level moves up and targets grow geometrically to the bottom",
		tree:  "L0 1:a-c:10\nL6 10:a-f:400 11:g-m:400 12:n-z:400",
		state: "base L4; L0 10M/- 0.25; L4 0M/64M 0.00; L5 0M/264M 0.00; L6 1200M/1089M 0.00",
		pick:  "none",
	}, {
		name:  "an overfull level picks the file with the least overlap below",
		tree:  "L5 20:a-c:40 21:d-f:40 22:g-k:40\nL6 10:a-c:150 11:d-e:20 12:f-f:10 13:g-m:120",
		state: "base L5; L5 120M/64M 1.88; L6 300M/378M 0.00",
		pick:  "L5->L6 score 1.88 (level size): 21 + 11 12",
	}, {
		name:  "L0 outranks a level with a lower score",
		tree:  "L0 1:a-c:1 2:a-c:1 3:a-c:1 4:a-c:1 5:a-c:1 6:a-c:1 7:a-c:1 8:a-c:1\nL5 20:a-c:40 21:d-f:40\nL6 10:a-c:150 11:d-m:150",
		state: "base L5; L0 8M/- 2.00; L5 80M/64M 1.25; L6 300M/349M 0.00",
		pick:  "L0->L5 score 2.00 (L0 files): 1 2 3 4 5 6 7 8 + 20",
	}, {
		name:  "a busy level makes room for the next candidate",
		tree:  "L0 1:a-c:1 2:a-c:1 3:a-c:1 4:a-c:1 5:a-c:1 6:a-c:1 7:a-c:1 8:a-c:1\nL5 20:a-c:40 21:d-f:40\nL6 10:a-c:150 11:d-m:150",
		busy:  []int{0},
		state: "base L5; L0 8M/- 2.00; L5 80M/64M 1.25; L6 300M/349M 0.00",
		pick:  "L5->L6 score 1.25 (level size): 20 + 10",
	}, {
		name:  "an L0 file being compacted blocks L0 and lowers its score",
		tree:  "L0 1:a-c:1* 2:a-c:1 3:a-c:1 4:a-c:1 5:a-c:1\nL6 10:a-z:100",
		state: "base L5; L0 5M/- 1.00; L5 0M/64M 0.00; L6 100M/94M 0.00",
		pick:  "none",
	}, {
		name:  "files being compacted do not count toward a level's score",
		tree:  "L5 20:a-c:40* 21:d-f:40\nL6 10:a-c:150 11:d-m:150",
		state: "base L5; L5 80M/64M 0.62; L6 300M/342M 0.00",
		pick:  "none",
	}, {
		name:  "a marked file is compacted when nothing else needs it",
		tree:  "L5 20:a-c:10 21:d-f:10!\nL6 10:a-c:150 11:d-m:150",
		state: "base L5; L5 20M/64M 0.31; L6 300M/288M 0.00",
		pick:  "L5->L6 score 0.00 (marked): 21 + 11",
	}, {
		name:  "a marked bottom file is rewritten in place",
		tree:  "L6 10:a-c:150! 11:d-m:150",
		state: "base L5; L5 0M/64M 0.00; L6 300M/270M 0.00",
		pick:  "L6->L6 score 0.00 (marked): 10 +",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			v := buildVersion(t, tc.tree)
			require.Equal(t, tc.state, formatState(Compute(v, opts)))
			var busy Busy
			for _, l := range tc.busy {
				busy[l] = true
			}
			got := "none"
			if p := PickAuto(v, opts, busy); p != nil {
				got = p.String()
			}
			require.Equal(t, tc.pick, got)
		})
	}
}

func TestGrandparentsAndBottommost(t *testing.T) {
	v := buildVersion(t, `L4 1:c-d:10
	                      L5 2:a-b:10 3:c-e:10 4:f-g:10
	                      L6 5:d-z:10`)
	p := &Pick{Level: 4, OutputLevel: 5, Inputs: [2][]*manifest.FileMetadata{v.Levels[4], {v.Levels[5][1]}}}
	require.Equal(t, []*manifest.FileMetadata{v.Levels[6][0]}, grandparents(v, p))
	require.False(t, IsBottommost(v, p))
	p2 := &Pick{Level: 5, OutputLevel: 6, Inputs: [2][]*manifest.FileMetadata{{v.Levels[5][0]}}}
	require.True(t, IsBottommost(v, p2))
}
