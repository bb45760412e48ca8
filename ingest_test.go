package strata

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// writeExternal writes an external table at path with kv (keys in any
// order; a value of "\x00del" writes a tombstone), separating values of
// 256 bytes and more.
func writeExternal(t *testing.T, fs vfs.FS, path string, kv map[string]string) {
	t.Helper()
	w, err := NewTableWriter(path, &TableWriterOptions{FS: fs, ValueThreshold: 256})
	require.NoError(t, err)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if kv[k] == extDel {
			require.NoError(t, w.Delete([]byte(k)))
		} else {
			require.NoError(t, w.Set([]byte(k), []byte(kv[k])))
		}
	}
	require.NoError(t, w.Close())
}

const extDel = "\x00del"

// overlay returns base with ext applied (tombstones delete).
func overlay(base, ext map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(ext))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range ext {
		if v == extDel {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// requireContents checks that db (or the snapshot, if s is set) holds
// exactly want, by Get and by iteration in both directions.
func requireContents(t *testing.T, db *DB, s *Snapshot, want map[string]string, where string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	get := db.Get
	newIter := db.NewIter
	if s != nil {
		get, newIter = s.Get, s.NewIter
	}
	for _, k := range keys {
		v, err := get([]byte(k))
		require.NoError(t, err, "%s: Get(%s)", where, k)
		require.Equal(t, want[k], string(v), "%s: Get(%s)", where, k)
	}
	it, err := newIter(nil)
	require.NoError(t, err)
	var fwd, bwd []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
		require.Equal(t, want[string(it.Key())], string(it.Value()), "%s: iterator value of %s", where, it.Key())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		bwd = append(bwd, string(it.Key()))
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	slices.Reverse(bwd)
	if len(keys) == 0 {
		keys = nil
	}
	require.Equal(t, keys, fwd, "%s: keys forward", where)
	require.Equal(t, keys, bwd, "%s: keys backward", where)
}

func ingestValue(i, size int) string {
	return fmt.Sprintf("%s%05d", bytes.Repeat([]byte{byte('a' + i%26)}, size), i)
}

// ingestFixture fills a DB with keys k000..k199, some in tables at several
// levels, some in the memtable (inside the range that is ingested), and
// returns the model and the external table's contents: keys k050..k149 and
// k300..k309, overwritten with large and small values, or deleted.
func ingestFixture(t *testing.T, db *DB) (model, ext map[string]string) {
	model = map[string]string{}
	set := func(i, size int) {
		k, v := fmt.Sprintf("k%03d", i), ingestValue(i, size)
		require.NoError(t, db.Set([]byte(k), []byte(v), NoSync))
		model[k] = v
	}
	for i := 0; i < 200; i++ {
		set(i, 300*(i%3))
	}
	require.NoError(t, db.Compact(nil, nil))
	for i := 0; i < 200; i += 7 {
		set(i, 40)
	}
	require.NoError(t, db.Flush())
	for i := 1; i < 200; i += 11 {
		set(i, 500)
	}
	require.NoError(t, db.Delete([]byte("k002"), NoSync))
	delete(model, "k002")
	ext = map[string]string{}
	for i := 50; i < 150; i++ {
		k := fmt.Sprintf("k%03d", i)
		switch i % 4 {
		case 0, 2:
			ext[k] = ingestValue(1000+i, 900)
		case 1:
			ext[k] = ingestValue(1000+i, 20)
		case 3:
			ext[k] = extDel
		}
	}
	for i := 300; i < 310; i++ {
		ext[fmt.Sprintf("k%03d", i)] = ingestValue(i, 700)
	}
	return model, ext
}

// TestIngest ingests a table over keys that are in tables and in the
// memtable, with a snapshot open: reads see the table's keys as newest,
// the snapshot sees none of them, and all of it survives compaction and
// reopen, on both filesystems.
func TestIngest(t *testing.T) {
	for _, fc := range bothFS(t) {
		for _, walOff := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/disable-wal=%t", fc.name, walOff), func(t *testing.T) {
				dir := fmt.Sprintf("%s-%t", fc.dir, walOff)
				opts := &Options{FS: fc.fs, MemTableSize: 64 << 10, ValueThreshold: 256, DisableWAL: walOff}
				db, err := Open(dir, opts)
				require.NoError(t, err)
				model, ext := ingestFixture(t, db)
				snap := db.NewSnapshot()

				path := dir + ".ext.sst"
				writeExternal(t, fc.fs, path, ext)
				require.NoError(t, db.Ingest([]string{path}))
				for _, p := range []string{path, ValueLogPath(path)} {
					_, err := fc.fs.Stat(p)
					require.ErrorIs(t, err, os.ErrNotExist, "Ingest left %s", p)
				}
				want := overlay(model, ext)
				requireContents(t, db, nil, want, "after ingest")
				requireContents(t, db, snap, model, "snapshot from before ingest")
				require.NoError(t, snap.Close())
				require.NoError(t, currentVersion(db).CheckLedger())
				m := db.Metrics()
				require.EqualValues(t, 1, m.Ingest.Count)
				require.NotZero(t, m.Ingest.BytesWritten)

				// Writes after the ingest are newer than it.
				require.NoError(t, db.Set([]byte("k051"), []byte("later"), NoSync))
				want["k051"] = "later"
				requireContents(t, db, nil, want, "write after ingest")

				// Reopen with the WAL setting switched, and back.
				require.NoError(t, db.Close())
				opts.DisableWAL = !walOff
				db, err = Open(dir, opts)
				require.NoError(t, err)
				requireContents(t, db, nil, want, "after reopen")
				require.NoError(t, db.Set([]byte("k052"), []byte("reopened"), NoSync))
				want["k052"] = "reopened"
				require.NoError(t, db.Close())
				opts.DisableWAL = walOff
				db, err = Open(dir, opts)
				require.NoError(t, err)
				requireContents(t, db, nil, want, "after the second reopen")
				require.NoError(t, db.Compact(nil, nil))
				requireContents(t, db, nil, want, "after compaction")
				require.NoError(t, currentVersion(db).CheckLedger())
				require.NoError(t, db.Close())
			})
		}
	}
}

// TestIngestLevel: a table that overlaps nothing goes to the bottom level;
// one that overlaps L0 goes to L0; one that overlaps only the bottom level
// goes just above it.
func TestIngestLevel(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	for _, k := range []string{"m1", "m5"} {
		require.NoError(t, db.Set([]byte(k), []byte("v"), NoSync))
	}
	require.NoError(t, db.Compact(nil, nil)) // m1..m5 at the bottom
	levelOf := func(key string) int {
		v := currentVersion(db)
		for l := 0; l < manifest.NumLevels; l++ {
			for _, f := range v.Levels[l] {
				if f.ContainsUserKey([]byte(key)) && f.LargestSeq == db.commit.lastSeq {
					return l
				}
			}
		}
		return -1
	}
	for _, tc := range []struct {
		keys  []string
		level int
	}{
		{[]string{"a", "b"}, manifest.NumLevels - 1},
		{[]string{"m2", "m3"}, manifest.NumLevels - 2},
		{[]string{"z"}, manifest.NumLevels - 1},
	} {
		kv := map[string]string{}
		for _, k := range tc.keys {
			kv[k] = "ext-" + k
		}
		writeExternal(t, fs, "ext.sst", kv)
		require.NoError(t, db.Ingest([]string{"ext.sst"}))
		require.Equal(t, tc.level, levelOf(tc.keys[0]), "level of the table holding %v", tc.keys)
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Set([]byte("q"), []byte("v"), NoSync))
	require.NoError(t, db.Flush()) // an L0 table holding q
	writeExternal(t, fs, "ext.sst", map[string]string{"p": "1", "r": "2"})
	require.NoError(t, db.Ingest([]string{"ext.sst"}))
	require.Equal(t, 0, levelOf("p"))
	requireGet(t, db, "m2", "ext-m2")
	requireGet(t, db, "r", "2")
	require.NoError(t, currentVersion(db).CheckOrdering())
}

// TestIngestRefuses: bad input fails with a clear error, leaves the files
// where they are and the DB as it was.
func TestIngestRefuses(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 256})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Set([]byte("a"), []byte("old"), NoSync))
	check := func(where string) {
		t.Helper()
		requireContents(t, db, nil, map[string]string{"a": "old"}, where)
		require.EqualValues(t, 0, db.Metrics().Ingest.Count, where)
	}

	w, err := NewTableWriter("bad.sst", &TableWriterOptions{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Set([]byte("b"), []byte("1")))
	require.ErrorContains(t, w.Set([]byte("a"), []byte("1")), "does not sort after")
	w.Abort()
	_, err = fs.Stat("bad.sst")
	require.Error(t, err, "Abort removes the table")

	writeExternal(t, fs, "x.sst", map[string]string{"a": "1", "c": "3"})
	writeExternal(t, fs, "y.sst", map[string]string{"b": "2"})
	require.ErrorContains(t, db.Ingest([]string{"x.sst", "y.sst"}), "overlap")
	check("overlapping tables")
	_, err = fs.Stat("x.sst")
	require.NoError(t, err, "a refused ingest leaves its files")

	// A table of the DB itself is not an external table.
	require.NoError(t, db.Flush())
	var dbTable string
	for _, name := range listDir(t, fs, "db") {
		if ft, _, ok := base.ParseFilename(name); ok && ft == base.FileTypeTable {
			dbTable = "db/" + name
		}
	}
	require.NotEmpty(t, dbTable)
	require.ErrorContains(t, db.Ingest([]string{dbTable}), "not written by a TableWriter")
	check("a DB's own table")

	big := string(bytes.Repeat([]byte("v"), 1000))
	damaged := func(name string, damage func(path string)) {
		writeExternal(t, fs, name, map[string]string{"d": big, "e": big, "f": "small"})
		damage(name)
		err := db.Ingest([]string{name})
		require.ErrorIs(t, err, ErrCorruption, name)
		check(name)
	}
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x40; return b }
	}
	damaged("flip.sst", func(p string) { editFile(t, fs, ValueLogPath(p), flip(100)) })
	damaged("novlog.sst", func(p string) { require.NoError(t, fs.Remove(ValueLogPath(p))) })
	damaged("truncvlog.sst", func(p string) { editFile(t, fs, ValueLogPath(p), func(b []byte) []byte { return b[:200] }) })
	damaged("fliptable.sst", func(p string) { editFile(t, fs, p, flip(10)) })
	// A value log that belongs to another table.
	writeExternal(t, fs, "other.sst", map[string]string{"d": big + "x", "e": big, "f": "small"})
	damaged("swapped.sst", func(p string) {
		require.NoError(t, fs.Remove(ValueLogPath(p)))
		require.NoError(t, fs.Rename(ValueLogPath("other.sst"), ValueLogPath(p)))
	})

	w, err = NewTableWriter("empty.sst", &TableWriterOptions{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.ErrorContains(t, db.Ingest([]string{"empty.sst"}), "no keys")
	require.ErrorContains(t, db.Ingest([]string{"missing.sst"}), "missing.sst")
	check("empty and missing tables")

	require.NoError(t, db.Close())
	ro, err := Open("db", &Options{FS: fs, ReadOnly: true})
	require.NoError(t, err)
	require.ErrorIs(t, ro.Ingest([]string{"x.sst"}), ErrReadOnly)
	require.NoError(t, ro.Close())
	require.ErrorIs(t, db.Ingest([]string{"x.sst"}), ErrClosed)
}

// editFile replaces the contents of path with edit's result.
func editFile(t *testing.T, fs vfs.FS, path string, edit func([]byte) []byte) {
	t.Helper()
	data := edit(readFile(t, fs, path))
	f, err := fs.Create(path)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestIngestFaults fails each write operation of an ingest in turn, and
// takes a crash image at each: the DB, and the DB reopened from the
// filesystem as left and from the crash image, hold either everything
// before the ingest or everything after it, never a mix; a successful
// ingest survives a crash right after it.
func TestIngestFaults(t *testing.T) {
	run := func(fail, crashAt int64) (ops int64, crashed *vfs.MemFS) {
		where := fmt.Sprintf("fail %d crash %d", fail, crashAt)
		mem := vfs.NewMem()
		var armed atomic.Bool
		var n atomic.Int64
		inj := vfs.InjectorFunc(func(op vfs.Op) error {
			if !armed.Load() || !op.Kind.IsWrite() {
				return nil
			}
			i := n.Add(1) - 1
			if i == crashAt {
				crashed = mem.CrashClone(vfs.CrashOptions{})
			}
			if i == fail {
				return fmt.Errorf("injected %s: %w", op, errInjectedForTest)
			}
			return nil
		})
		fs := vfs.NewErrorFS(mem, inj)
		opts := &Options{FS: fs, MemTableSize: 64 << 10, ValueThreshold: 256}
		db, err := Open("db", opts)
		require.NoError(t, err)
		model, ext := ingestFixture(t, db)
		// The memtable holds only a synced write outside the table's
		// range, which must survive the ingest's manifest edit.
		require.NoError(t, db.Flush())
		require.NoError(t, db.Set([]byte("synced"), []byte("yes"), Sync))
		model["synced"] = "yes"
		writeExternal(t, fs, "ext.sst", ext)
		after := overlay(model, ext)
		armed.Store(true)
		err = db.Ingest([]string{"ext.sst"})
		armed.Store(false)
		ops = n.Load()
		if err == nil {
			requireContents(t, db, nil, after, where+": ingest succeeded")
			if crashAt < 0 {
				crashed = mem.CrashClone(vfs.CrashOptions{})
			}
		} else if db.Metrics().BackgroundE == "" {
			requireContents(t, db, nil, model, where+": ingest failed")
		}
		_ = db.Close()
		ingested := err == nil
		reopen := func(fs vfs.FS, what string, mustHold bool) {
			db, err := Open("db", &Options{FS: fs, MemTableSize: 64 << 10, ValueThreshold: 256})
			require.NoError(t, err, "%s: %s", where, what)
			defer db.Close()
			got := map[string]string{}
			it, err := db.NewIter(nil)
			require.NoError(t, err)
			for ok := it.First(); ok; ok = it.Next() {
				got[string(it.Key())] = string(it.Value())
			}
			require.NoError(t, it.Close())
			if _, ok := got["k300"]; ok || mustHold {
				requireContents(t, db, nil, after, where+": "+what+" (ingested)")
			} else {
				requireContents(t, db, nil, model, where+": "+what+" (not ingested)")
			}
			require.NoError(t, currentVersion(db).CheckLedger())
		}
		reopen(mem, "reopened", ingested)
		if crashed != nil {
			// A crash image taken after Ingest returned must hold it.
			reopen(crashed, "crash image", ingested && crashAt < 0)
		}
		return ops, crashed
	}
	ops, _ := run(-1, -1)
	require.Greater(t, ops, int64(5))
	t.Logf("%d write operations in an ingest", ops)
	for i := int64(0); i < ops; i++ {
		run(i, -1)
		run(-1, i)
	}
}

var errInjectedForTest = errors.New("injected fault")

// TestIngestConcurrentWrites ingests tables while writers write keys
// inside and outside their ranges: every acknowledged write outside the
// ranges survives, and a key inside holds either its write or the table's
// value, whichever came last; a write acknowledged after the last Ingest
// returned beats the table.
func TestIngestConcurrentWrites(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, MemTableSize: 32 << 10, ValueThreshold: 128})
	require.NoError(t, err)
	defer db.Close()
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var written [2]atomic.Int64
	for g := 0; g < 2; g++ {
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					written[g].Store(int64(i))
					errs <- nil
					return
				default:
				}
				v := bytes.Repeat([]byte{byte('a' + g)}, 50+i%300)
				if err := db.Set([]byte(fmt.Sprintf("w%d-%06d", g, i)), v, NoSync); err != nil {
					errs <- err
					return
				}
				if err := db.Set([]byte(fmt.Sprintf("r%03d", i%100)), []byte("writer"), NoSync); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for round := 0; round < 10; round++ {
		kv := map[string]string{}
		for i := 0; i < 100; i++ {
			kv[fmt.Sprintf("r%03d", i)] = ingestValue(round*100+i, 10+i*7)
		}
		writeExternal(t, fs, "ext.sst", kv)
		require.NoError(t, db.Ingest([]string{"ext.sst"}))
	}
	close(stop)
	for range 2 {
		require.NoError(t, <-errs)
	}
	for g := 0; g < 2; g++ {
		for i := int64(0); i < written[g].Load(); i++ {
			v, err := db.Get([]byte(fmt.Sprintf("w%d-%06d", g, i)))
			require.NoError(t, err)
			require.Len(t, v, 50+int(i)%300)
		}
	}
	for i := 0; i < 100; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("r%03d", i)))
		require.NoError(t, err)
		require.True(t, string(v) == "writer" || string(v) == ingestValue(900+i, 10+i*7), "r%03d = %.20q", i, v)
	}
	require.NoError(t, db.Set([]byte("r000"), []byte("last"), NoSync))
	requireGet(t, db, "r000", "last")
	require.NoError(t, currentVersion(db).CheckLedger())
}

// rawEntry is an entry of a table rawExternal writes.
type rawEntry struct {
	key   string
	seq   base.SeqNum
	kind  base.Kind
	value string
}

// rawExternal writes entries as an external table at path, as no
// TableWriter would, to test what Ingest accepts.
func rawExternal(t *testing.T, fs vfs.FS, path string, entries []rawEntry) {
	t.Helper()
	f, err := fs.Create(path)
	require.NoError(t, err)
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	w.SetUserProperty(externalProp, externalVersion)
	for _, e := range entries {
		require.NoError(t, w.Add(base.MakeInternalKey([]byte(e.key), e.seq, e.kind), []byte(e.value)))
	}
	require.NoError(t, w.Close())
}

// TestIngestLayers ingests a table with merge operands stacked above a
// value that expires, as IngestRange writes them: they read as merged
// until the value expires, as the operands alone after, hide the DB's
// older entries throughout, and a write after the ingest is newer than all
// of them. Tables whose layers are malformed are refused.
func TestIngestLayers(t *testing.T) {
	fs := vfs.NewMem()
	clock := newTestClock(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := Open("db", &Options{FS: fs, Clock: clock.Now, Merger: ListAppend})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Set([]byte("c"), []byte("old"), NoSync))
	require.NoError(t, db.Set([]byte("d"), []byte("old"), NoSync))
	before := map[string]string{"c": "old", "d": "old"}

	expiry, err := expiryFrom(clock.Now(), time.Hour)
	require.NoError(t, err)
	meta := string(base.EntryMeta{ExpiresAt: expiry}.Append(nil))
	for _, bad := range []struct {
		name    string
		entries []rawEntry
		err     string
	}{
		{"operand with nothing below", []rawEntry{{"c", 1, base.KindMerge, "x"}}, "no value below"},
		{"operand above another key", []rawEntry{{"c", 1, base.KindMerge, "x"}, {"d", 0, base.KindSet, "v"}}, "no value below"},
		{"layers with a gap", []rawEntry{{"c", 2, base.KindMerge, "x"}, {"c", 0, base.KindSet, "v"}}, "not a merge operand and the layer below"},
		{"operand at sequence number 0", []rawEntry{{"c", 0, base.KindMerge, "x"}}, "not above a value"},
		{"value above sequence number 0", []rawEntry{{"c", 1, base.KindSet, "v"}}, "not 0"},
		{"tombstone below an operand", []rawEntry{{"c", 1, base.KindMerge, "x"}, {"c", 0, base.KindDelete, ""}}, "tombstone below"},
		{"bad metadata", []rawEntry{{"c", 0, base.KindSetMeta, "\xff"}}, "metadata"},
	} {
		rawExternal(t, fs, "bad.sst", bad.entries)
		err := db.Ingest([]string{"bad.sst"})
		require.ErrorIs(t, err, ErrCorruption, bad.name)
		require.ErrorContains(t, err, bad.err, bad.name)
		require.NoError(t, fs.Remove("bad.sst"))
		requireContents(t, db, nil, before, bad.name)
	}

	op1, op2 := string(ListElement(nil, []byte("1"))), string(ListElement(nil, []byte("2")))
	rawExternal(t, fs, "ok.sst", []rawEntry{
		{"c", 2, base.KindMerge, op2},
		{"c", 1, base.KindMerge, op1},
		{"c", 0, base.KindSetMeta, meta + "v"},
		{"d", 0, base.KindSetMeta, meta + "w"},
	})
	require.NoError(t, db.Ingest([]string{"ok.sst"}))
	requireContents(t, db, nil, map[string]string{"c": "v" + op1 + op2, "d": "w"}, "ingested")
	clock.Advance(time.Hour)
	requireContents(t, db, nil, map[string]string{"c": op1 + op2}, "expired")
	require.NoError(t, db.Compact(nil, nil))
	requireContents(t, db, nil, map[string]string{"c": op1 + op2}, "expired, compacted")
	require.NoError(t, db.Set([]byte("c"), []byte("new"), NoSync))
	requireContents(t, db, nil, map[string]string{"c": "new"}, "written after")
}

// TestIngestKeepsMemtables: an ingest whose tables overlap no memtable
// leaves the memtables unflushed, takes its sequence number in the WAL
// (not in the tables, which keep theirs with an offset in the manifest),
// and makes the writes before it durable; a crash right after it keeps
// both, and the numbers allocated after recovery are above the ingest's.
// A memtable that overlaps is flushed first, and the ingest still wins.
func TestIngestKeepsMemtables(t *testing.T) {
	mem := vfs.NewMem()
	opts := &Options{FS: mem, ValueThreshold: 64}
	db, err := Open("db", opts)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("a%03d", i)), []byte(fmt.Sprintf("before-%d", i)), NoSync))
	}
	snap := db.NewSnapshot()
	ext := map[string]string{"m1": "ingested-1", "m2": strings.Repeat("v", 300), "m3": "ingested-3"}
	writeExternal(t, mem, "ext.sst", ext)
	flushes := db.Metrics().Flush.Count
	require.NoError(t, db.Ingest([]string{"ext.sst"}))
	require.Equal(t, flushes, db.Metrics().Flush.Count, "a memtable that does not overlap was flushed")
	v := currentVersion(db)
	var ingested []*manifest.FileMetadata
	for _, files := range v.Levels {
		for _, f := range files {
			if f.SeqOffset != 0 {
				ingested = append(ingested, f)
			}
		}
	}
	require.Len(t, ingested, 1)
	require.Equal(t, ingested[0].SmallestSeq, ingested[0].SeqOffset)
	require.Greater(t, ingested[0].SeqOffset, base.SeqNum(50))
	for k, want := range ext {
		requireGet(t, db, k, want)
	}
	_, err = snap.Get([]byte("m1"))
	require.ErrorIs(t, err, ErrNotFound, "a snapshot from before the ingest sees it")
	require.NoError(t, snap.Close())

	// A crash now keeps the writes before the ingest and the ingest.
	clone := mem.CrashClone(vfs.CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(1, 2))})
	require.NoError(t, db.Close())
	for round, fs := range []vfs.FS{clone, mem} {
		o := *opts
		o.FS = fs
		db, err := Open("db", &o)
		require.NoError(t, err, "round %d", round)
		for i := 0; i < 50; i++ {
			requireGet(t, db, fmt.Sprintf("a%03d", i), fmt.Sprintf("before-%d", i))
		}
		for k, want := range ext {
			requireGet(t, db, k, want)
		}
		// Writes after recovery are newer than the ingest.
		require.NoError(t, db.Set([]byte("m1"), []byte("after"), Sync))
		requireGet(t, db, "m1", "after")
		require.NoError(t, db.Close())
		db, err = Open("db", &o)
		require.NoError(t, err)
		requireGet(t, db, "m1", "after")
		requireGet(t, db, "m3", "ingested-3")

		// An overlapping memtable is flushed first; the ingest wins.
		require.NoError(t, db.Set([]byte("n2"), []byte("memtable"), NoSync))
		require.NoError(t, db.Set([]byte("z"), []byte("memtable"), NoSync))
		path := fmt.Sprintf("ext-over-%d.sst", round)
		writeExternal(t, fs, path, map[string]string{"n1": "x", "n2": "ingested", "n3": "y"})
		flushes := db.Metrics().Flush.Count
		require.NoError(t, db.Ingest([]string{path}))
		require.Greater(t, db.Metrics().Flush.Count, flushes)
		requireGet(t, db, "n2", "ingested")
		requireGet(t, db, "z", "memtable")
		// Compaction rewrites the ingested tables with their numbers.
		require.NoError(t, db.Compact(nil, []byte("zz")))
		for _, files := range currentVersion(db).Levels {
			for _, f := range files {
				require.Zero(t, f.SeqOffset, "%s after a full compaction", f)
			}
		}
		requireGet(t, db, "m1", "after")
		requireGet(t, db, "m2", strings.Repeat("v", 300))
		requireGet(t, db, "n2", "ingested")
		require.NoError(t, currentVersion(db).CheckLedger())
		require.NoError(t, db.Close())
	}
}

// TestIngestModeSwitchRace: an Ingest decides how to sequence itself in
// commit order, against the mode switches queued ahead of it. Queued
// behind BeginBulkLoad (the leader held in a Sync write's sync), it
// flushes the memtables (the bulk load's writes skip the WAL, so a WAL
// mark would not make them durable) and sets the manifest's last sequence
// number; queued behind EndBulkLoad, it marks the WAL. Inside a bulk
// load it makes the load's writes before it durable. Queued behind Close
// it is refused and leaves no file behind. Each time a crash after it
// keeps the acknowledged Sync write, the bulk load's writes before it and
// the ingest.
func TestIngestModeSwitchRace(t *testing.T) {
	t.Run("behind-begin", func(t *testing.T) {
		// The leader is held in its sync of the value log written at
		// commit (an Ingest syncs the WAL before it queues, which a held
		// WAL sync would hold too).
		fs := newHoldFS(".vlog")
		db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
		require.NoError(t, err)
		release := fs.hold()
		leader := make(chan error, 1)
		go func() { leader <- db.Set([]byte("a"), []byte(strings.Repeat("a", 200)), Sync) }()
		<-fs.entered // the leader waits in its value log's sync
		begin := make(chan error, 1)
		go func() { begin <- db.BeginBulkLoad() }()
		waitQueued(t, db, 2, begin)
		writeExternal(t, fs.mem, "ext.sst", map[string]string{"x1": "ingested", "x2": strings.Repeat("x", 300)})
		ingest := make(chan error, 1)
		go func() { ingest <- db.Ingest([]string{"ext.sst"}) }()
		waitQueued(t, db, 3, ingest)
		release()
		require.NoError(t, <-leader)
		require.NoError(t, <-begin)
		require.NoError(t, <-ingest)
		require.NoError(t, db.Set([]byte("bulk"), []byte("bulk"), NoSync))
		checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "x1": true, "x2": true, "bulk": false})
		require.NoError(t, db.EndBulkLoad())
		checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "x1": true, "x2": true, "bulk": true})
		require.NoError(t, db.Close())
	})

	t.Run("behind-end", func(t *testing.T) {
		fs := newHoldFS(".sst")
		db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
		require.NoError(t, err)
		require.NoError(t, db.BeginBulkLoad())
		require.NoError(t, db.Set([]byte("bulk"), []byte("bulk"), NoSync))
		// The ingest's tables are written before it queues: hold the
		// flush's table sync only once they are.
		writeExternal(t, fs.mem, "ext.sst", map[string]string{"x1": "ingested", "x2": strings.Repeat("x", 300)})
		release := fs.hold()
		end := make(chan error, 1)
		go func() { end <- db.EndBulkLoad() }()
		<-fs.entered // EndBulkLoad's flush waits in its table's sync
		ingest := make(chan error, 1)
		go func() { ingest <- db.Ingest([]string{"ext.sst"}) }()
		waitQueued(t, db, 2, ingest)
		release()
		require.NoError(t, <-end)
		require.NoError(t, <-ingest)
		require.NoError(t, db.Set([]byte("after"), []byte("after"), Sync))
		checkAfterCrash(t, fs.mem, map[string]bool{"bulk": true, "x1": true, "x2": true, "after": true})
		require.NoError(t, db.Close())
	})

	t.Run("inside-bulk", func(t *testing.T) {
		// The bulk load's writes before the ingest skip the WAL: the
		// ingest flushes them, so a crash that keeps it keeps them.
		fs := newHoldFS(".none")
		db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("a"), []byte("a"), Sync))
		require.NoError(t, db.BeginBulkLoad())
		require.NoError(t, db.Set([]byte("bulk"), []byte(strings.Repeat("b", 200)), NoSync))
		writeExternal(t, fs.mem, "ext.sst", map[string]string{"x1": "ingested", "x2": strings.Repeat("x", 300)})
		require.NoError(t, db.Ingest([]string{"ext.sst"}))
		checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "bulk": true, "x1": true, "x2": true})
		require.NoError(t, db.EndBulkLoad())
		require.NoError(t, db.Set([]byte("after"), []byte("after"), Sync))
		checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "bulk": true, "x1": true, "x2": true, "after": true})
		require.NoError(t, db.Close())
	})

	t.Run("behind-close", func(t *testing.T) {
		fs := newHoldFS(".log")
		db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
		require.NoError(t, err)
		release := fs.hold()
		leader := make(chan error, 1)
		go func() { leader <- db.Set([]byte("a"), []byte("a"), Sync) }()
		<-fs.entered
		closed := make(chan error, 1)
		go func() { closed <- db.Close() }()
		waitQueued(t, db, 2, closed)
		writeExternal(t, fs.mem, "ext.sst", map[string]string{"x1": "ingested"})
		ingest := make(chan error, 1)
		go func() { ingest <- db.Ingest([]string{"ext.sst"}) }()
		// The ingest queues behind Close, or finds the DB closing.
		for queued(db) < 3 && len(ingest) == 0 {
			runtime.Gosched()
		}
		release()
		require.NoError(t, <-leader)
		require.NoError(t, <-closed)
		require.ErrorIs(t, <-ingest, ErrClosed)
		// The external files stay; nothing the ingest prepared stays in
		// the directory once it reopens.
		_, err = fs.mem.Stat("ext.sst")
		require.NoError(t, err)
		checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "x1": false})
		db, err = Open("db", &Options{FS: fs.mem})
		require.NoError(t, err)
		names, err := fs.mem.List("db")
		require.NoError(t, err)
		v := currentVersion(db)
		live := map[base.FileNum]bool{}
		for _, files := range v.Levels {
			for _, f := range files {
				live[f.FileNum] = true
			}
		}
		for num := range v.Vlogs {
			live[num] = true
		}
		for _, name := range names {
			if ft, num, ok := base.ParseFilename(name); ok && (ft == base.FileTypeTable || ft == base.FileTypeVlog) {
				require.True(t, live[num], "%s left in the directory", name)
			}
		}
		require.NoError(t, db.Close())
	})
}

// TestIngestReopenDisk: on the disk filesystem, an ingest beside an
// unflushed memtable leaves its WAL mark to the next Open (Close does not
// flush): the database reopens, writable and read-only, with the writes
// before the ingest and the ingest, and allocates above its numbers.
func TestIngestReopenDisk(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{ValueThreshold: 64})
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("a%02d", i)), []byte(strings.Repeat("a", 100+i)), NoSync))
	}
	ext := dir + "-ext.sst"
	writeExternal(t, vfs.Default, ext, map[string]string{"m1": "ingested", "m2": strings.Repeat("m", 300)})
	flushes := db.Metrics().Flush.Count
	require.NoError(t, db.Ingest([]string{ext}))
	require.Equal(t, flushes, db.Metrics().Flush.Count)
	require.NoError(t, db.Close())

	check := func(db *DB) {
		t.Helper()
		for i := range 20 {
			requireGet(t, db, fmt.Sprintf("a%02d", i), strings.Repeat("a", 100+i))
		}
		requireGet(t, db, "m2", strings.Repeat("m", 300))
	}
	ro, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	check(ro)
	requireGet(t, ro, "m1", "ingested")
	require.NoError(t, ro.Close())
	db, err = Open(dir, &Options{ValueThreshold: 64})
	require.NoError(t, err)
	check(db)
	require.NoError(t, db.Set([]byte("m1"), []byte("after"), NoSync))
	require.NoError(t, db.Close())
	db, err = Open(dir, &Options{ValueThreshold: 64})
	require.NoError(t, err)
	check(db)
	requireGet(t, db, "m1", "after")
	require.NoError(t, db.Close())
}

// TestIngestDuringRotations ingests tables while writers fill tiny
// memtables, so that rotations retire and close WALs while each ingest
// syncs the current one ahead of its turn (presyncWAL): a sync that finds
// its WAL closed by a rotation must not become the database's error, and
// every acknowledged Sync write, the writers' and the ingests', survives
// a crash after.
func TestIngestDuringRotations(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, MemTableSize: 16 << 10, ValueThreshold: 64})
	require.NoError(t, err)
	defer db.Close()
	const writers = 2
	stop := make(chan struct{})
	errs := make(chan error, writers)
	var synced [writers][]string
	// Each writer says when its first (Sync) write is acknowledged, and
	// the ingests start only then: on a loaded machine the ingests could
	// otherwise all finish before a writer ran at all.
	started := make(chan struct{}, writers)
	for g := range writers {
		go func() {
			for i := 0; ; i++ {
				if i == 1 {
					started <- struct{}{}
				}
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				k := fmt.Sprintf("w%d-%06d", g, i)
				opt := NoSync
				if i%8 == 0 {
					opt = Sync
				}
				if err := db.Set([]byte(k), bytes.Repeat([]byte{'v'}, 100+i%200), opt); err != nil {
					errs <- fmt.Errorf("%s: %w", k, err)
					return
				}
				if opt == Sync {
					synced[g] = append(synced[g], k)
				}
			}
		}()
	}
	rounds := 40
	if testing.Short() {
		rounds = 15
	}
	for range writers {
		select {
		case <-started:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	want := map[string]bool{}
	for round := range rounds {
		kv := map[string]string{}
		for i := range 20 {
			kv[fmt.Sprintf("x%03d-%02d", round, i)] = ingestValue(round*20+i, 10+i*9)
		}
		writeExternal(t, fs, "ext.sst", kv)
		if err := db.Ingest([]string{"ext.sst"}); err != nil {
			close(stop)
			t.Fatalf("ingest %d: %v", round, err)
		}
		for k := range kv {
			want[k] = true
		}
	}
	close(stop)
	for range writers {
		require.NoError(t, <-errs)
	}
	require.NoError(t, db.Set([]byte("after"), []byte("after"), Sync))
	want["after"] = true
	for g := range writers {
		require.NotEmpty(t, synced[g])
		for _, k := range synced[g] {
			want[k] = true
		}
	}
	checkAfterCrash(t, fs, want)
}

// TestIngestPresyncOfRetiredWAL replays, step by step, the interleaving
// that once stopped a database: the WAL flusher loads the current WAL
// and an ingest's presync loads it too; a rotation retires it and the
// sealer closes it; the presync's sync then finds it closed, and the
// flusher flushes it. The closed WAL's failed sync must leave no error
// for the flusher to report as the database's (which stopped every
// write): the ingest, a Sync write after it and a crash after keep
// everything acknowledged.
func TestIngestPresyncOfRetiredWAL(t *testing.T) {
	type stop struct {
		armed   atomic.Bool
		calls   atomic.Int64
		entered chan *walFile
		release chan struct{}
	}
	hold := func(s *stop) func(*walFile) {
		return func(wf *walFile) {
			s.calls.Add(1)
			if s.armed.CompareAndSwap(true, false) {
				s.entered <- wf
				<-s.release
			}
		}
	}
	flusher := &stop{entered: make(chan *walFile, 1), release: make(chan struct{})}
	presync := &stop{entered: make(chan *walFile, 1), release: make(chan struct{})}
	testHookWALFlush, testHookPresync = hold(flusher), hold(presync)
	defer func() { testHookWALFlush, testHookPresync = nil, nil }()

	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 64})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Set([]byte("a"), []byte("a"), Sync))

	// The flusher loads the current WAL and waits.
	flusher.armed.Store(true)
	require.NoError(t, db.Set([]byte("b"), []byte("b"), NoSync))
	wal := <-flusher.entered
	// An ingest's presync loads the same WAL and waits.
	writeExternal(t, fs, "ext.sst", map[string]string{"x1": "ingested", "x2": strings.Repeat("x", 300)})
	presync.armed.Store(true)
	ingest := make(chan error, 1)
	go func() { ingest <- db.Ingest([]string{"ext.sst"}) }()
	require.Same(t, wal, <-presync.entered)
	// A rotation retires the WAL, and the sealer closes it.
	require.NoError(t, db.writeOp(nil, false, opRotate))
	require.NoError(t, db.waitAllSealed())
	require.NotSame(t, wal, db.walFile.Load())
	// The presync syncs the closed WAL; the ingest goes on.
	close(presync.release)
	require.NoError(t, <-ingest)
	// The flusher flushes the closed WAL; its next round shows that it
	// is done (and has reported whatever it found).
	calls := flusher.calls.Load()
	close(flusher.release)
	for i := 0; flusher.calls.Load() == calls; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("c%d", i)), []byte("c"), NoSync))
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, db.Set([]byte("d"), []byte("d"), Sync))
	checkAfterCrash(t, fs, map[string]bool{"a": true, "b": true, "x1": true, "x2": true, "d": true})
}

// TestIngestMarkInEmptyMemTable: an ingest into an empty memtable leaves
// its mark alone in the WAL; a write larger than the memtable then
// rotates the still empty memtable. That rotation deleted the WAL with
// the mark, so the manifest's last sequence number stayed below the
// ingest's and the next WAL's writes followed a gap: the database would
// not open, after a crash or a clean Close, and every write after the
// ingest was out of reach. The memtable is now frozen and flushed.
func TestIngestMarkInEmptyMemTable(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, MemTableSize: 64 << 10, DisableAutomaticCompactions: true, DisableGC: true}
	db, err := Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("before"), Sync))
	require.NoError(t, db.Flush())
	w, err := NewTableWriter("ext.sst", &TableWriterOptions{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Set([]byte("m"), []byte("ingested")))
	require.NoError(t, w.Close())
	require.NoError(t, db.Ingest([]string{"ext.sst"}))
	big := bytes.Repeat([]byte("x"), 200<<10) // larger than the memtable
	require.NoError(t, db.Set([]byte("b"), big, Sync))
	require.NoError(t, db.Set([]byte("c"), []byte("after"), Sync))
	crashed := fs.CrashClone(vfs.CrashOptions{})
	require.NoError(t, db.Close())

	for round, rfs := range []vfs.FS{fs, crashed} {
		db, err = Open("db", &Options{FS: rfs, MemTableSize: 64 << 10})
		require.NoError(t, err, "reopen round %d", round)
		got, err := db.Get([]byte("c"))
		require.NoError(t, err, "acknowledged Sync write lost")
		require.Equal(t, "after", string(got))
		got, err = db.Get([]byte("b"))
		require.NoError(t, err, "acknowledged Sync write lost")
		require.Equal(t, big, got)
		got, err = db.Get([]byte("m"))
		require.NoError(t, err)
		require.Equal(t, "ingested", string(got))
		require.NoError(t, db.Close())
	}
}

// TestCheckpointBesideIngest: a checkpoint flushes, then pins the
// version; an ingest that did not overlap the memtable installed its
// table in between without a flush, so the checkpoint held the ingest
// but not a Sync write acknowledged before the ingest began: not the
// state after a prefix of the writes. An ingest now flushes every
// memtable while a checkpoint runs. Here the checkpoint's flush is held
// until the ingest returns or 300 ms pass (the ingest now waits for it).
func TestCheckpointBesideIngest(t *testing.T) {
	fs := vfs.NewMem()
	flushStarted := make(chan struct{}, 16)
	release := make(chan struct{})
	var block atomic.Bool
	opts := &Options{FS: fs, DisableAutomaticCompactions: true, DisableGC: true,
		EventListener: &EventListener{FlushBegin: func(FlushInfo) {
			if block.Load() {
				flushStarted <- struct{}{}
				<-release
			}
		}}}
	db, err := Open("db", opts)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a0"), []byte("old"), Sync))
	w, err := NewTableWriter("ext.sst", &TableWriterOptions{FS: fs})
	require.NoError(t, err)
	require.NoError(t, w.Set([]byte("m"), []byte("ingested")))
	require.NoError(t, w.Close())

	block.Store(true)
	ckErr := make(chan error, 1)
	go func() { ckErr <- db.Checkpoint("ckpt") }()
	<-flushStarted // the checkpoint rotated the memtable and waits for its flush
	block.Store(false)
	require.NoError(t, db.Set([]byte("w"), []byte("before-ingest"), Sync))
	ingErr := make(chan error, 1)
	go func() { ingErr <- db.Ingest([]string{"ext.sst"}) }()
	select {
	case err := <-ingErr:
		ingErr <- err
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-ingErr)
	require.NoError(t, <-ckErr)
	require.NoError(t, db.Close())

	ck, err := Open("ckpt", &Options{FS: fs})
	require.NoError(t, err)
	defer ck.Close()
	_, errM := ck.Get([]byte("m"))
	_, errW := ck.Get([]byte("w"))
	if errM == nil {
		require.NoError(t, errW, "the checkpoint holds the ingest but not the Sync write acknowledged before it")
	}
}
