package checkpoint_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestOverwriteFigures measures incremental checkpoints of an overwrite
// workload on the disk: uploaded bytes per checkpoint against the bytes
// written since the last one, the store's space amplification and its
// object count against the number of files the checkpoints reference. It
// runs only when STRATA_CHECKPOINT_FIGURES is set, to
// "keys,valueSize,checkpoints,writesPerCheckpoint" (or "1" for
// 20000,4096,100,2000), and logs a row per checkpoint and a summary.
// STRATA_CHECKPOINT_KEEP, STRATA_CHECKPOINT_MINLIVE, STRATA_CHECKPOINT_MERGE,
// STRATA_CHECKPOINT_SEGMENT ("segmentMiB,smallFileMiB") and
// STRATA_CHECKPOINT_REUPLOAD (MiB) override the upload options;
// STRATA_CHECKPOINT_S3=1 checkpoints into a versitygw S3 server started on
// loopback (as TestS3Store) instead of a local store;
// STRATA_CHECKPOINT_SEND=1 hides the local store's Compose, so that moved
// pieces are uploaded as to a store without server-side copies;
// STRATA_CHECKPOINT_CSV names a file to write the rows to, for charts.
func TestOverwriteFigures(t *testing.T) {
	spec := os.Getenv("STRATA_CHECKPOINT_FIGURES")
	if spec == "" {
		t.Skip("set STRATA_CHECKPOINT_FIGURES=1 (or keys,valueSize,checkpoints,writesPerCheckpoint) to measure")
	}
	if spec == "1" {
		spec = "20000,4096,100,2000"
	}
	var p [4]int
	for i, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(f)
		require.NoError(t, err, "STRATA_CHECKPOINT_FIGURES=%q", spec)
		p[i] = n
	}
	keys, valueSize, checkpoints, perCheckpoint := p[0], p[1], p[2], p[3]
	ctx := context.Background()
	root := t.TempDir()
	db, err := strata.Open(root+"/db", &strata.Options{FS: vfs.Default, MemTableSize: 16 << 20, ValueLogFileSize: 32 << 20, TargetFileSize: 4 << 20})
	require.NoError(t, err)
	defer db.Close()
	store, err := checkpoint.NewLocalStore(root + "/store")
	require.NoError(t, err)
	uo := &checkpoint.UploadOptions{}
	if s := os.Getenv("STRATA_CHECKPOINT_KEEP"); s != "" {
		uo.KeepLast, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	if s := os.Getenv("STRATA_CHECKPOINT_MINLIVE"); s != "" {
		uo.MinLiveRatio, err = strconv.ParseFloat(s, 64)
		require.NoError(t, err)
	}
	if s := os.Getenv("STRATA_CHECKPOINT_MERGE"); s != "" {
		uo.MergeSmallSegments, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	if s := os.Getenv("STRATA_CHECKPOINT_SEGMENT"); s != "" { // segmentSize,smallFileSize in MiB
		var seg, small int64
		_, err := fmt.Sscanf(s, "%d,%d", &seg, &small)
		require.NoError(t, err)
		uo.SegmentSize, uo.SmallFileSize = seg<<20, small<<20
	}
	if s := os.Getenv("STRATA_CHECKPOINT_REUPLOAD"); s != "" { // MiB
		var mib int64
		_, err := fmt.Sscanf(s, "%d", &mib)
		require.NoError(t, err)
		uo.ReuploadBytes = mib << 20
	}
	var target checkpoint.Store = store
	var s3 *checkpoint.S3Store
	if os.Getenv("STRATA_CHECKPOINT_S3") != "" {
		s3 = newS3Store(t, startS3Server(t), "figures", "")
		target = s3
	}
	if os.Getenv("STRATA_CHECKPOINT_SEND") != "" {
		target = struct{ checkpoint.Store }{target}
	}
	u, err := checkpoint.NewUploader(target, uo)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(7, 8))
	value := make([]byte, valueSize)
	key := func(i int) []byte { return []byte(fmt.Sprintf("user%08d", i)) }
	for i := range keys {
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		require.NoError(t, db.Set(key(i), value, strata.NoSync))
	}
	start := time.Now()
	var written, uploaded, maxFiles, newBytes, reup, composed int64
	var perCkpt []int64
	var maxAmp float64
	minFewer := math.Inf(1)     // referenced files per object, the lowest
	minFewerData := math.Inf(1) // the same, data objects only
	var rows []string
	csv := []string{"checkpoint,written_bytes,uploaded_bytes,new_bytes,reuploaded_bytes,composed_bytes,store_bytes,referenced_bytes,space_amp,objects,segments,files,referenced_files,duration_ms"}
	var last checkpoint.Stats
	for c := range checkpoints {
		for range perCheckpoint {
			for j := 0; j < 64; j++ {
				value[rng.IntN(valueSize)] = byte(rng.Uint32())
			}
			require.NoError(t, db.Set(key(rng.IntN(keys)), value, strata.NoSync))
		}
		interval := int64(perCheckpoint * (len(key(0)) + valueSize))
		st, err := db.CheckpointToStore(ctx, u)
		require.NoError(t, err)
		if c > 0 { // the first uploads the initial load
			written += interval
			uploaded += st.UploadedBytes
			perCkpt = append(perCkpt, st.UploadedBytes)
		}
		if c >= u0(checkpoints) {
			maxAmp = max(maxAmp, st.SpaceAmp)
			minFewer = min(minFewer, float64(st.ReferencedFiles)/float64(st.Objects))
			minFewerData = min(minFewerData, float64(st.ReferencedFiles)/float64(st.Objects-1)) // all but the registry
		}
		maxFiles = max(maxFiles, int64(st.Files))
		last = st
		rows = append(rows, fmt.Sprintf("%4d %10d %10d %10d %10d %10d %7.3f %7d %6d %6d %9.3f %6dms", st.ID, interval, st.UploadedBytes, st.NewBytes, st.ReuploadedBytes, st.ComposedBytes,
			float64(st.UploadedBytes)/float64(interval), st.Objects, st.Files, st.ReferencedFiles, st.SpaceAmp, st.Duration.Milliseconds()))
		csv = append(csv, fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%d,%d,%d,%d,%d", st.ID, interval, st.UploadedBytes, st.NewBytes, st.ReuploadedBytes, st.ComposedBytes,
			st.StoreBytes, st.ReferencedBytes, st.SpaceAmp, st.Objects, st.Segments, st.Files, st.ReferencedFiles, st.Duration.Milliseconds()))
		if c > 0 {
			newBytes += st.NewBytes
			reup += st.ReuploadedBytes
			composed += st.ComposedBytes
		}
	}
	t.Logf("%d keys x %d bytes, %d checkpoints, %d overwrites (%d MiB) between checkpoints, %s",
		keys, valueSize, checkpoints, perCheckpoint, perCheckpoint*valueSize>>20, time.Since(start).Round(time.Second))
	if path := os.Getenv("STRATA_CHECKPOINT_CSV"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(csv, "\n")+"\n"), 0o644))
	}
	t.Logf("  id    written   uploaded        new  reuploaded   composed  up/wr objects  files   refd space-amp   time")
	for _, r := range rows {
		t.Log(r)
	}
	objs, err := checkpoint.Objects(ctx, target)
	require.NoError(t, err)
	segs := 0
	for _, o := range objs {
		if o.Segment {
			segs++
		}
		if os.Getenv("STRATA_CHECKPOINT_OBJECTS") != "" {
			t.Logf("object %s: %d bytes, segment %v, %d pieces, live %.2f", o.Name, o.Size, o.Segment, o.Pieces, o.LiveRatio)
		}
	}
	slices.Sort(perCkpt)
	if len(perCkpt) > 0 {
		t.Logf("uploaded per checkpoint: median %.1f MiB, 90th percentile %.1f MiB",
			float64(perCkpt[len(perCkpt)/2])/(1<<20), float64(perCkpt[len(perCkpt)*9/10])/(1<<20))
	}
	t.Logf("per checkpoint: %.1f MiB new files, %.1f MiB moved out of sparse or small segments, of which %.1f MiB copied by the store (not uploaded)",
		float64(newBytes)/float64(checkpoints-1)/(1<<20), float64(reup)/float64(checkpoints-1)/(1<<20), float64(composed)/float64(checkpoints-1)/(1<<20))
	t.Logf("uploaded per checkpoint: %.1f MiB for %.1f MiB written (%.3f); space amp max %.3f (after the first %d), last %.3f; objects %d (%d segments) for %d files (max %d), store %d MiB",
		float64(uploaded)/float64(checkpoints-1)/(1<<20), float64(written)/float64(checkpoints-1)/(1<<20), float64(uploaded)/float64(written),
		maxAmp, u0(checkpoints), last.SpaceAmp, last.Objects, segs, last.Files, maxFiles, last.StoreBytes>>20)
	t.Logf("objects (all, the registry too) against files the retained checkpoints reference: at least %.1fx fewer (after the first %d), last %d for %d",
		minFewer, u0(checkpoints), last.Objects, last.ReferencedFiles)
	t.Logf("data objects (without the registry) against the same files: at least %.1fx fewer", minFewerData)
	if s3 != nil {
		t.Logf("S3 store: %v", s3.Stats())
	}
}

// u0 is the number of checkpoints the space-amplification maximum skips:
// the store fills up over the first few (the retained three).
func u0(int) int { return 3 }
