package strata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// flipByte returns a copy of fs in which byte off of file name is flipped.
func flipByte(t *testing.T, fs *vfs.MemFS, name string, off int64) *vfs.MemFS {
	t.Helper()
	c := fs.CrashClone(vfs.CrashOptions{})
	data := readFile(t, c, name)
	data[off] ^= 0x20
	f, err := c.Create(name)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	return c
}

func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return data
}

func filesOfType(t *testing.T, fs vfs.FS, typ base.FileType) []string {
	t.Helper()
	return filesOfTypeIn(t, fs, "db", typ)
}

func filesOfTypeIn(t *testing.T, fs vfs.FS, dir string, typ base.FileType) []string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if ft, _, ok := base.ParseFilename(n); ok && ft == typ {
			out = append(out, n)
		}
	}
	return out
}

// flipStep spaces the flipped bytes of a file of size bytes: about 6000
// flips in a soak run, 600 by default and 100 with -short.
func flipStep(size int64) int64 {
	switch {
	case soak:
		return max(1, size/6000)
	case testing.Short():
		return max(1, size/100)
	}
	return max(1, size/600)
}

// requireCorruption checks err matches ErrCorruption and names file.
func requireCorruption(t *testing.T, err error, file, where string) {
	t.Helper()
	if !errors.Is(err, ErrCorruption) {
		t.Fatalf("%s: got %v, want an error matching ErrCorruption", where, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("%s: corruption error %q does not name %s", where, err, file)
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: errors.As finds no *CorruptionError in %v", where, err)
	}
	if !strings.Contains(file, ce.File) || ce.File == "" {
		t.Fatalf("%s: CorruptionError.File is %q, want %s", where, ce.File, file)
	}
}

func fillKeys(t *testing.T, db *DB, n int, rng *rand.Rand) model {
	m := model{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key%05d", i)
		v := make([]byte, 20+rng.IntN(80))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		require.NoError(t, db.Set([]byte(k), v, NoSync))
		m[k] = string(v)
	}
	return m
}

// oneFileDB fills a database with n keys, flushes it into a single file of
// type typ and closes it; it returns the keys and the file's base name.
func oneFileDB(t *testing.T, opts *Options, n int, seed uint64, typ base.FileType) (model, string) {
	t.Helper()
	db, err := Open("db", opts)
	require.NoError(t, err)
	m := fillKeys(t, db, n, rand.New(rand.NewPCG(seed, seed)))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	files := filesOfType(t, opts.FS, typ)
	require.Len(t, files, 1)
	return m, files[0]
}

// getAll reads every key of m: each read must return the right value or
// fail with ErrCorruption naming file. It returns how many failed.
func getAll(t *testing.T, db *DB, m model, file, where string) (bad int) {
	t.Helper()
	for k, want := range m {
		got, err := db.Get([]byte(k))
		if err != nil {
			requireCorruption(t, err, file, where)
			bad++
			continue
		}
		require.Equal(t, want, string(got), "%s: Get(%s) returned a wrong value", where, k)
	}
	return bad
}

// TestCorruptSSTable flips bytes of a table: every read either returns the
// right value or fails with ErrCorruption naming the table, and the flip is
// always noticed by reading everything.
func TestCorruptSSTable(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Compression: "none", CacheSize: -1}
	m, table := oneFileDB(t, opts, 200, 1, base.FileTypeTable)
	name := "db/" + table
	size := int64(len(readFile(t, fs, name)))
	for off := int64(0); off < size; off += flipStep(size) {
		where := fmt.Sprintf("flip at %d of %d", off, size)
		o := *opts
		o.FS = flipByte(t, fs, name, off)
		checkFlippedTable(t, "db", &o, m, table, off, size, where)
	}
}

// checkFlippedTable opens the database in dir, whose table (size bytes)
// has a byte flipped at off: Open fails with ErrCorruption naming it only
// for a flip in the footer; otherwise every read returns the right value
// or ErrCorruption naming the table, a scan returns no wrong value, and
// the gets and the scan together notice the flip.
func checkFlippedTable(t *testing.T, dir string, opts *Options, m model, table string, off, size int64, where string) {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		// Open reads every table's footer: a damaged footer fails it.
		requireCorruption(t, err, table, where)
		require.GreaterOrEqual(t, off, size-56, "%s: Open failed for a flip outside the footer", where)
		return
	}
	noticed := getAll(t, db, m, table, where) > 0
	it, err := db.NewIter(nil)
	if err != nil {
		requireCorruption(t, err, table, where)
		noticed = true
	} else {
		for ok := it.First(); ok; ok = it.Next() {
			require.Equal(t, m[string(it.Key())], string(it.Value()), "%s: scan returned a wrong value", where)
		}
		if err := it.Error(); err != nil {
			requireCorruption(t, err, table, where)
			noticed = true
		}
		it.Close()
	}
	require.True(t, noticed, "%s: corruption went unnoticed", where)
	require.NoError(t, db.Close())
}

// TestCorruptSSTableMapped is TestCorruptSSTable on the disk, where
// tables are mapped and point lookups through the learned index read
// their blocks in place, verifying only the restart intervals they search
// (lsm/sstable's getInPlace): every read returns the right value or fails
// with ErrCorruption naming the table, and reading everything notices
// every flip.
func TestCorruptSSTableMapped(t *testing.T) {
	dir := t.TempDir() + "/db"
	opts := &Options{FS: vfs.Default, Compression: "none", CacheSize: -1}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 5))
	m := model{}
	for i := range 1000 {
		// Keys the learned index fits: big-endian integers.
		k := string(binary.BigEndian.AppendUint64([]byte("k"), uint64(i)*7919))
		v := make([]byte, 20+rng.IntN(80))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		require.NoError(t, db.Set([]byte(k), v, NoSync))
		m[k] = string(v)
	}
	require.NoError(t, db.Flush())
	getAll(t, db, m, "", "intact")
	li := db.Metrics().LearnedIndex
	require.Equal(t, 1, li.Tables, "the table has no model")
	require.Greater(t, li.InPlace, uint64(len(m)/2), "lookups did not read the table in place: %s", li)
	require.NoError(t, db.Close())

	tables := filesOfTypeIn(t, vfs.Default, dir, base.FileTypeTable)
	require.Len(t, tables, 1)
	table := tables[0]
	path := dir + "/" + table
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer file.Close()
	st, err := file.Stat()
	require.NoError(t, err)
	size := st.Size()
	// A third of TestCorruptSSTable's flips: each opens the database on
	// the disk.
	for off := int64(0); off < size; off += 3 * flipStep(size) {
		where := fmt.Sprintf("flip at %d of %d", off, size)
		var b [1]byte
		_, err := file.ReadAt(b[:], off)
		require.NoError(t, err)
		_, err = file.WriteAt([]byte{b[0] ^ 0x20}, off)
		require.NoError(t, err)
		checkFlippedTable(t, dir, opts, m, table, off, size, where)
		_, err = file.WriteAt(b[:], off)
		require.NoError(t, err)
	}
}

// TestCorruptManifest flips bytes of the manifest. The manifest syncs after
// every edit, so each edit's chunks say the one before was synced: a flip
// in any edit but the last makes Open fail with ErrCorruption naming it. A
// flip in the last edit cannot be told from a crash's damage to an edit
// whose sync never finished, so the edit is dropped as a torn tail and the
// database opens at the version before it, with every flushed key intact.
// (The last edit here is a compaction; the crash image still holds its
// input table, whose removal no directory sync made durable.)
func TestCorruptManifest(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, MemTableSize: 64 << 10}
	db, err := Open("db", opts)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 2))
	m := model{}
	for round := 0; round < 4; round++ {
		for k, v := range fillKeys(t, db, 300, rng) {
			m[k] = v
		}
		require.NoError(t, db.Flush())
	}
	require.NoError(t, db.Compact(nil, []byte("key00100")))
	require.NoError(t, db.Close())
	manifests := filesOfType(t, fs, base.FileTypeManifest)
	require.Len(t, manifests, 1)
	name := "db/" + manifests[0]
	data := readFile(t, fs, name)
	size := int64(len(data))
	chunks := logChunks(data)
	require.Equal(t, size, chunks[len(chunks)-1].end, "the manifest must end with a whole chunk")
	accepted := 0
	c := 0
	for off := int64(0); off < size; off++ {
		for chunks[c].end <= off {
			c++
		}
		where := fmt.Sprintf("flip at %d of %d", off, size)
		flipped := flipByte(t, fs, name, off)
		o := *opts
		o.FS = flipped
		db, err := Open("db", &o)
		if chunks[c].start <= off && syncedPast(chunks, c) {
			requireCorruption(t, err, manifests[0], where)
			continue
		}
		require.NoError(t, err, where)
		accepted++
		got, err := readAll(t, db)
		require.NoError(t, err, where)
		require.Equal(t, m, got, "%s: opened with different contents", where)
		db.Close()
	}
	t.Logf("%d of %d flips were refused at open; %d opened intact", size-int64(accepted), size, accepted)
}

// logChunk is one chunk of a WAL or manifest: [start, end) and the synced
// offset it carries.
type logChunk struct {
	start, end, synced int64
}

// logChunks returns the chunks of a WAL or manifest, parsed by the record
// log format (lsm/record): 32 KiB blocks of chunks with a 15-byte header
// whose bytes 4 and 5 hold the payload length and bytes 7 to 14 the synced
// offset; a block tail shorter than a header is padding.
func logChunks(data []byte) []logChunk {
	const blockSize, headerSize = 32 << 10, 15
	var chunks []logChunk
	for pos := 0; pos+headerSize <= len(data); {
		if left := blockSize - pos%blockSize; left < headerSize {
			pos += left
			continue
		}
		end := pos + headerSize + int(binary.LittleEndian.Uint16(data[pos+4:]))
		synced := int64(binary.LittleEndian.Uint64(data[pos+7:]))
		chunks = append(chunks, logChunk{int64(pos), int64(end), synced})
		pos = end
	}
	return chunks
}

// syncedPast reports whether a chunk after chunks[c] says the file was
// synced past chunks[c]'s start: damage to chunks[c] is then corruption
// rather than a crash's damage to the unsynced tail (see lsm/record).
func syncedPast(chunks []logChunk, c int) bool {
	for _, later := range chunks[c+1:] {
		if later.synced > chunks[c].start {
			return true
		}
	}
	return false
}

// TestCorruptWAL flips bytes of a WAL written with a Sync write every 100
// writes. A flip in a chunk that a later chunk says was synced makes Open
// fail with ErrCorruption naming the WAL. A flip past the last synced
// offset any chunk records cannot be told from a crash's damage to the
// unsynced tail (a page that never reached the disk): recovery keeps a
// prefix of the writes that holds every Sync write, never a wrong value. A
// flip in block padding changes nothing.
func TestCorruptWAL(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs}
	db, err := Open("db", opts)
	require.NoError(t, err)
	h := &history{}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 1500; i++ {
		k := []byte(fmt.Sprintf("key%04d", rng.IntN(1000)))
		v := []byte(strings.Repeat(string(rune('a'+i%26)), 10+rng.IntN(90)))
		wo := NoSync
		if i%100 == 50 {
			wo = Sync
		}
		require.NoError(t, db.Set(k, v, wo))
		h.add("set", mset(k, v))
		if wo.Sync {
			h.markDurable()
		}
	}
	require.NoError(t, db.Close())
	logs := filesOfType(t, fs, base.FileTypeLog)
	require.Len(t, logs, 1)
	name := "db/" + logs[0]
	data := readFile(t, fs, name)
	size := int64(len(data))
	require.Greater(t, size, int64(3*32<<10), "the WAL must span several blocks")
	chunks := logChunks(data)
	require.Equal(t, size, chunks[len(chunks)-1].end, "the WAL must end with a whole chunk")
	lastChunk := chunks[len(chunks)-1].start
	require.Greater(t, lastChunk%(32<<10), int64(1000), "the last block must hold several chunks")
	require.True(t, syncedPast(chunks, 0), "no chunk says the WAL was synced")
	require.False(t, syncedPast(chunks, len(chunks)-30), "the WAL must end in chunks written after its last sync")
	var offs []int64
	for off := int64(0); off < size; off += flipStep(size) {
		offs = append(offs, off)
	}
	// Always flip the last chunk's header and payload.
	for _, off := range []int64{lastChunk, lastChunk + 4, lastChunk + 6, lastChunk + 9, size - 1} {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	c, refused := 0, 0
	for _, off := range offs {
		for chunks[c].end <= off {
			c++
		}
		// A flip in block padding changes nothing.
		inChunk := chunks[c].start <= off
		where := fmt.Sprintf("flip at %d of %d", off, size)
		flipped := flipByte(t, fs, name, off)
		o := *opts
		o.FS = flipped
		db, err := Open("db", &o)
		if inChunk && syncedPast(chunks, c) {
			requireCorruption(t, err, logs[0], where)
			refused++
			continue
		}
		require.NoError(t, err, where)
		got, err := readAll(t, db)
		require.NoError(t, err, where)
		if h.matchPrefix(got, len(h.ops)) < 0 {
			t.Fatalf("%s: recovered state is not a prefix of the writes holding every Sync write: %s", where, h.describeMismatch(got))
		}
		db.Close()
	}
	t.Logf("%d of %d flips were refused at open; %d recovered a prefix", refused, len(offs), len(offs)-refused)
}

// TestCorruptValueLog flips bytes of a value log: the keys whose values the
// damaged record holds fail with ErrCorruption naming the value log; every
// other key reads back correctly.
func TestCorruptValueLog(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, ValueThreshold: 64, CacheSize: -1}
	m, vlogFile := oneFileDB(t, opts, 300, 4, base.FileTypeVlog)
	name := "db/" + vlogFile
	size := int64(len(readFile(t, fs, name)))
	for off := int64(0); off < size; off += flipStep(size) {
		where := fmt.Sprintf("flip at %d of %d", off, size)
		o := *opts
		o.FS = flipByte(t, fs, name, off)
		db, err := Open("db", &o)
		require.NoError(t, err, where)
		bad := getAll(t, db, m, vlogFile, where)
		// A damaged header makes the whole file unreadable (each read says
		// so); a damaged footer costs nothing (records carry their own
		// checksums); otherwise exactly one record holds the byte.
		switch {
		case off < vlog.HeaderLen:
			require.Positive(t, bad, "%s: a damaged header went unnoticed", where)
		case off >= size-vlog.FooterLen:
			require.Zero(t, bad, "%s: a damaged footer lost values", where)
		default:
			require.Equal(t, 1, bad, "%s: one flipped byte damaged %d values", where, bad)
		}
		require.NoError(t, db.Close())
	}
}

// TestMappedValueLogFaultNamesValueLog: a value log truncated behind the
// DB's back, before or after a point lookup mapped it, fails the lookups
// that reach past its end (a fault in the mapping, which the lookup reads
// inside the table's own fault handling, or a short read) as corruption
// of the value log, named with its offset, never of the table that holds
// the pointer.
func TestMappedValueLogFaultNamesValueLog(t *testing.T) {
	for _, mapFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("mapped-before=%t", mapFirst), func(t *testing.T) {
			dir := t.TempDir() + "/db"
			db, err := Open(dir, &Options{FS: vfs.Default, ValueThreshold: 64, CacheSize: -1})
			require.NoError(t, err)
			defer db.Close()
			for i := range 300 {
				require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte{byte(i)}, 4000), NoSync))
			}
			require.NoError(t, db.Flush())
			if mapFirst {
				_, err = db.Get([]byte("k00001"))
				require.NoError(t, err)
			}
			vlogs := filesOfTypeIn(t, vfs.Default, dir, base.FileTypeVlog)
			require.Len(t, vlogs, 1)
			require.NoError(t, os.Truncate(dir+"/"+vlogs[0], vlog.HeaderLen+10))
			for _, k := range []string{"k00200", "k00299"} {
				_, err = db.Get([]byte(k))
				require.ErrorIs(t, err, ErrCorruption, k)
				require.Contains(t, err.Error(), vlogs[0], k)
				require.NotContains(t, err.Error(), ".sst", k)
			}
		})
	}
}
