package strata

import (
	"bytes"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/memtable"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// TestBatchTooLargeForMemtable: a batch whose entries need more than the
// largest memtable holds is refused with ErrBatchTooLarge before anything
// is written, and writes go on; separated at commit, its large values need
// no memtable room and the same batch is taken. (The largest memtable
// holds about 4 GiB; the test lowers the bound to 1 MiB.)
func TestBatchTooLargeForMemtable(t *testing.T) {
	defer func(n int) { maxMemtableNeed = n }(maxMemtableNeed)
	maxMemtableNeed = 1 << 20
	big := bytes.Repeat([]byte("v"), 300<<10)
	fill := func(b *Batch) {
		for _, k := range []string{"a", "b"} {
			require.NoError(t, b.Set([]byte(k), big))
		}
	}
	require.Greater(t, 2*memtable.EntrySize(1, len(big)), maxMemtableNeed)

	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: -1})
	require.NoError(t, err)
	seq := db.visibleSeq.Load()
	b := db.NewBatch()
	fill(b)
	require.ErrorIs(t, db.Apply(b, Sync), ErrBatchTooLarge)
	require.Equal(t, seq, db.visibleSeq.Load(), "a refused batch was applied")
	require.NoError(t, db.Set([]byte("c"), big, Sync), "writes go on")
	require.NoError(t, db.Close())
	db, err = Open("db", &Options{FS: fs, ValueThreshold: -1})
	require.NoError(t, err)
	_, err = db.Get([]byte("a"))
	require.ErrorIs(t, err, ErrNotFound, "a refused batch reached the WAL")
	requireGet(t, db, "c", string(big))
	require.NoError(t, db.Close())

	db, err = Open("db2", &Options{FS: fs, ValueThreshold: 1024, SeparationTime: SeparateAtCommit})
	require.NoError(t, err)
	b = db.NewBatch()
	fill(b)
	require.NoError(t, db.Apply(b, Sync))
	requireGet(t, db, "b", string(big))
	require.NoError(t, db.Close())
}

// TestSizeLimitsFitFormats: the largest key with the largest value fits
// every format that holds them, with room for their overhead.
func TestSizeLimitsFitFormats(t *testing.T) {
	const meta = 20 // base.EntryMeta, before a value with a TTL
	require.LessOrEqual(t, uint64(MaxKeySize+MaxValueSize+64), uint64(vlog.MaxRecordLen), "value-log record")
	require.LessOrEqual(t, memtable.EntrySize(MaxKeySize, MaxValueSize+meta), memtable.MaxAvailable, "memtable")
	require.LessOrEqual(t, MaxKeySize+8+MaxValueSize+meta+64, sstable.MaxBlockLen, "data block")
	require.LessOrEqual(t, batchHeaderLen+MaxKeySize+MaxValueSize+meta+64, maxBatchSize, "batch")
}

// TestSizeLimitChecks: the checks at the limits and one past them, for
// each kind of write.
func TestSizeLimitChecks(t *testing.T) {
	for _, c := range []struct {
		kind          base.Kind
		key, value    int
		wantTooLarge  bool
		name, message string
	}{
		{base.KindSet, MaxKeySize, MaxValueSize, false, "set at the limits", ""},
		{base.KindSet, MaxKeySize + 1, 0, true, "set, key", "key of 1048577 bytes, MaxKeySize is 1048576"},
		{base.KindSet, 1, MaxValueSize + 1, true, "set, value", "value of 1073741825 bytes, MaxValueSize is 1073741824"},
		{base.KindMerge, MaxKeySize, MaxValueSize, false, "merge at the limits", ""},
		{base.KindMerge, 1, MaxValueSize + 1, true, "merge, operand", "value of 1073741825 bytes"},
		{base.KindDelete, MaxKeySize, 0, false, "delete at the limit", ""},
		{base.KindDelete, MaxKeySize + 1, 0, true, "delete", "key of 1048577 bytes"},
		{base.KindRangeDelete, MaxKeySize, MaxKeySize, false, "range deletion at the limits", ""},
		{base.KindRangeDelete, MaxKeySize + 1, 1, true, "range deletion, start", "start key of 1048577 bytes"},
		{base.KindRangeDelete, 1, MaxKeySize + 1, true, "range deletion, end", "end key of 1048577 bytes"},
	} {
		err := checkEntrySize(c.kind, c.key, c.value)
		if !c.wantTooLarge {
			require.NoError(t, err, c.name)
			continue
		}
		require.ErrorIs(t, err, ErrTooLarge, c.name)
		require.ErrorContains(t, err, c.message, c.name)
	}
	require.NoError(t, checkValueSize("value", MaxValueSize))
	require.ErrorIs(t, checkValueSize("value", MaxValueSize+1), ErrTooLarge)
}

// TestSizeLimitsWritePath: every write refuses a key past MaxKeySize (at
// its real size) and a value past the value limit (lowered to 64 KiB, so
// as not to allocate gigabytes), writes nothing then, and takes a key and
// value at the limits, kept in the tree or in a value log, through flush,
// compaction, reopen and ingestion.
func TestSizeLimitsWritePath(t *testing.T) {
	defer func(n int) { maxValueSize = n }(maxValueSize)
	maxValueSize = 64 << 10
	maxKey := bytes.Repeat([]byte("k"), MaxKeySize)
	longKey := bytes.Repeat([]byte("k"), MaxKeySize+1)
	maxValue := bytes.Repeat([]byte("v"), maxValueSize)
	longValue := bytes.Repeat([]byte("v"), maxValueSize+1)
	small := []byte("x")

	for _, threshold := range []int{-1, 1024} { // values in the tree, in value logs
		fs := vfs.NewMem()
		opts := &Options{FS: fs, ValueThreshold: threshold, Merger: ListAppend}
		db, err := Open("db", opts)
		require.NoError(t, err)
		seq := db.visibleSeq.Load()
		for name, write := range map[string]func() error{
			"Set key":          func() error { return db.Set(longKey, small, nil) },
			"Set value":        func() error { return db.Set(small, longValue, nil) },
			"SetWithTTL key":   func() error { return db.SetWithTTL(longKey, small, time.Hour, nil) },
			"SetWithTTL value": func() error { return db.SetWithTTL(small, longValue, time.Hour, nil) },
			"Merge key":        func() error { return db.Merge(longKey, small, nil) },
			"Merge operand":    func() error { return db.Merge(small, ListElement(nil, longValue), nil) },
			"Delete":           func() error { return db.Delete(longKey, nil) },
			"DeleteRange":      func() error { return db.DeleteRange([]byte("a"), longKey, nil) },
			"Batch.Set":        func() error { return db.NewBatch().Set(small, longValue) },
			"Batch.SetWithTTL": func() error { return db.NewBatch().SetWithTTL(longKey, small, time.Hour) },
			"Batch.Merge":      func() error { return db.NewBatch().Merge(small, ListElement(nil, longValue)) },
			"Batch.Delete":     func() error { return db.NewBatch().Delete(longKey) },
			"Batch.DeleteRange": func() error {
				return db.NewBatch().DeleteRange(longKey, append(longKey, 0))
			},
		} {
			require.ErrorIs(t, write(), ErrTooLarge, name)
		}
		require.Equal(t, seq, db.visibleSeq.Load(), "a refused write was written")

		require.NoError(t, db.Set(maxKey, maxValue, nil))
		require.NoError(t, db.SetWithTTL([]byte("ttl"), maxValue, time.Hour, nil))
		require.NoError(t, db.Merge([]byte("list"), ListElement(nil, maxValue[:maxValueSize-4]), nil))
		b := db.NewBatch()
		require.NoError(t, b.Set([]byte("batch"), maxValue))
		require.NoError(t, b.DeleteRange([]byte("a"), append([]byte("a"), maxKey[1:]...)))
		require.NoError(t, db.Apply(b, nil))
		require.NoError(t, db.Flush())
		require.NoError(t, db.Compact(nil, nil))
		require.NoError(t, db.Close())
		db, err = Open("db", opts)
		require.NoError(t, err)
		for _, k := range [][]byte{maxKey, []byte("ttl"), []byte("batch")} {
			v, err := db.Get(k)
			require.NoError(t, err)
			require.Equal(t, maxValue, v)
		}

		// An external table: the writer refuses too large a key or value
		// and goes on; what it took is ingested.
		w, err := NewTableWriter("ext.sst", &TableWriterOptions{FS: fs, ValueThreshold: threshold})
		require.NoError(t, err)
		require.ErrorIs(t, w.Set(longKey, small), ErrTooLarge)
		require.ErrorIs(t, w.Set([]byte("e1"), longValue), ErrTooLarge)
		require.ErrorIs(t, w.Delete(longKey), ErrTooLarge)
		require.NoError(t, w.Set([]byte("e1"), maxValue))
		require.NoError(t, w.Set(append([]byte("e2"), maxKey[2:]...), small))
		require.NoError(t, w.Close())
		require.NoError(t, db.Ingest([]string{"ext.sst"}))
		requireGet(t, db, "e1", string(maxValue))
		requireGet(t, db, "e2"+string(maxKey[2:]), "x")
		require.NoError(t, db.Close())
	}
}
