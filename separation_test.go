package strata

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

func currentVersion(db *DB) *manifest.Version {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.vs.Current()
}

// TestSeparationLayout writes values on both sides of the threshold and
// checks where they land: small ones inline, large ones in value logs that
// roll at ValueLogFileSize, with the manifest recording each value log's
// exact size and every table recording what it references.
func TestSeparationLayout(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 100, ValueLogFileSize: 64 << 10, MemTableSize: 1 << 20})
	require.NoError(t, err)
	var separatedBytes uint64
	for i := 0; i < 400; i++ {
		size := 50
		if i%2 == 0 {
			size = 1000 + i
			separatedBytes += uint64(size)
		}
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%04d", i)), make([]byte, size), NoSync))
	}
	require.NoError(t, db.Flush())
	v := currentVersion(db)
	require.GreaterOrEqual(t, len(v.Vlogs), 3, "value logs roll at ValueLogFileSize")
	var records, values uint64
	for num, m := range v.Vlogs {
		st, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeVlog, num))
		require.NoError(t, err)
		require.Equal(t, uint64(st.Size()), m.Size, "manifest size of %s", num)
		records += m.Records
		values += m.ValueBytes
	}
	require.Equal(t, uint64(200), records)
	require.Equal(t, separatedBytes, values)

	// The table's refs block accounts for every record of every value log.
	require.Len(t, v.Levels[0], 1)
	f := v.Levels[0][0]
	file, err := fs.Open("db/" + base.MakeFilename(base.FileTypeTable, f.FileNum))
	require.NoError(t, err)
	r, err := sstable.NewReader(file, int64(f.Size), sstable.ReaderOptions{FileNum: f.FileNum})
	require.NoError(t, err)
	block, ok, err := r.MetaBlock(vlog.RefsBlock)
	require.NoError(t, err)
	require.True(t, ok)
	refs, err := vlog.DecodeRefs(block)
	require.NoError(t, err)
	require.Len(t, refs, len(v.Vlogs))
	for _, ref := range refs {
		m := v.Vlogs[ref.FileNum]
		require.NotNil(t, m)
		require.Equal(t, m.Records, ref.Pointers)
		require.Equal(t, m.Size-vlog.HeaderLen-vlog.FooterLen, ref.Bytes, "every record of %s is referenced", ref.FileNum)
	}
	require.NoError(t, r.Close())
	// The manifest holds the same references with the table, and the
	// version's ledger sums them.
	require.True(t, f.VlogRefsKnown)
	require.Equal(t, refs, f.VlogRefs)
	for _, ref := range refs {
		require.Equal(t, ref.Bytes, v.VlogLive(ref.FileNum))
	}

	for i := 0; i < 400; i++ {
		got, err := db.Get([]byte(fmt.Sprintf("k%04d", i)))
		require.NoError(t, err)
		want := 50
		if i%2 == 0 {
			want = 1000 + i
		}
		require.Len(t, got, want)
	}
	require.NoError(t, db.Close())
}

// TestOrphanValueLogsRemoved: value logs the manifest does not name (a
// flush that crashed before its edit) are deleted at open; named ones stay.
func TestOrphanValueLogsRemoved(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 10})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), make([]byte, 100), Sync))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	orphan := "db/" + base.MakeFilename(base.FileTypeVlog, 999)
	f, err := fs.Create(orphan)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	db, err = Open("db", &Options{FS: fs, ValueThreshold: 10})
	require.NoError(t, err)
	_, err = fs.Stat(orphan)
	require.Error(t, err, "the orphan value log survived Open")
	v, err := db.Get([]byte("k"))
	require.NoError(t, err)
	require.Len(t, v, 100)
	require.Len(t, filesOfType(t, fs, base.FileTypeVlog), 1)
	require.NoError(t, db.Close())
}

// TestOpenReadsMissingVlogRefs: a manifest written before tables' value-log
// references were recorded in it lists tables without them; Open reads
// them from the tables, so the ledger is exact, and records them.
func TestOpenReadsMissingVlogRefs(t *testing.T) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, ValueThreshold: 64, MemTableSize: 64 << 10, DisableAutomaticCompactions: true}
	db, err := Open("db", opts)
	require.NoError(t, err)
	for i := 0; i < 2000; i++ {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i%700)), make([]byte, 100+i%50), nil))
	}
	require.NoError(t, db.Flush())
	want := map[base.FileNum][]manifest.VlogRef{}
	v := currentVersion(db)
	v.Files(func(_ int, f *manifest.FileMetadata) { want[f.FileNum] = f.VlogRefs })
	require.NoError(t, db.Close())

	// Rewrite the manifest as an older build would have: no references.
	var mu sync.Mutex
	mu.Lock()
	vs, err := manifest.Load(manifest.Options{FS: fs, Dirname: "db", Mu: &mu})
	require.NoError(t, err)
	old := vs.Current()
	old.Files(func(_ int, f *manifest.FileMetadata) { f.VlogRefs, f.VlogRefsKnown = nil, false })
	w, err := manifest.WriteSnapshot(fs, "db", 900, old, vs.LogNum(), vs.LastSeq(), 1000)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, manifest.SetCurrent(fs, "db", 900, 901))
	mu.Unlock()

	for round := 0; round < 2; round++ { // the second Open finds them in the manifest
		db, err = Open("db", opts)
		require.NoError(t, err)
		v = currentVersion(db)
		require.True(t, v.VlogRefsComplete())
		got := map[base.FileNum][]manifest.VlogRef{}
		v.Files(func(_ int, f *manifest.FileMetadata) { got[f.FileNum] = f.VlogRefs })
		for num, refs := range want {
			require.Equal(t, refs, got[num], "table %s", num)
		}
		require.NoError(t, v.CheckLedger())
		require.NoError(t, db.Set([]byte("x"), make([]byte, 100), Sync))
		require.NoError(t, db.Flush()) // writes a new manifest
		require.NoError(t, db.Close())
	}
}

// TestIterMappedValues reads a database on the OS's filesystem, whose
// finished value logs are mapped, with IterOptions.MappedValues: every
// value, forward and backward, within bounds, equals what an ordinary
// iterator returns, and a value damaged on disk is a corruption error.
func TestIterMappedValues(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{FS: vfs.Default, ValueThreshold: 100, ValueLogFileSize: 64 << 10, MemTableSize: 1 << 20})
	require.NoError(t, err)
	defer db.Close()
	const n = 300
	want := make(map[string][]byte)
	for i := 0; i < n; i++ {
		k := fmt.Appendf(nil, "key%04d", i)
		v := bytes.Repeat([]byte{byte(i)}, 50+(i*37)%3000)
		require.NoError(t, db.Set(k, v, nil))
		want[string(k)] = v
	}
	require.NoError(t, db.Flush())

	read := func(o *IterOptions, reverse bool) map[string][]byte {
		it, err := db.NewIter(o)
		require.NoError(t, err)
		got := make(map[string][]byte)
		next, ok := it.Next, it.First()
		if reverse {
			next, ok = it.Prev, it.Last()
		}
		for ; ok; ok = next() {
			got[string(it.Key())] = bytes.Clone(it.Value())
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		return got
	}
	for _, reverse := range []bool{false, true} {
		require.Equal(t, want, read(&IterOptions{MappedValues: true}, reverse))
		require.Equal(t, read(nil, reverse), read(&IterOptions{MappedValues: true}, reverse))
		bounded := &IterOptions{LowerBound: []byte("key0100"), UpperBound: []byte("key0200"), MappedValues: true}
		got := read(bounded, reverse)
		require.Len(t, got, 100)
		for k, v := range got {
			require.Equal(t, want[k], v)
		}
	}

	// Damage the last byte of a value in a finished value log.
	// In place, without truncating the file (the mapping sees the change).
	var damaged bool
	for num, m := range currentVersion(db).Vlogs {
		if m.Size == 0 || m.RecordsEnd != 0 || damaged {
			continue // not finished, so not mapped
		}
		f, err := os.OpenFile(filepath.Join(dir, base.MakeFilename(base.FileTypeVlog, num)), os.O_RDWR, 0)
		require.NoError(t, err)
		var b [1]byte
		off := int64(m.Size) - vlog.FooterLen - 1
		_, err = f.ReadAt(b[:], off)
		require.NoError(t, err)
		b[0] ^= 0x40
		_, err = f.WriteAt(b[:], off)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		damaged = true
	}
	require.True(t, damaged)
	it, err := db.NewIter(&IterOptions{MappedValues: true})
	require.NoError(t, err)
	for ok := it.First(); ok; ok = it.Next() {
		_ = it.Value()
	}
	require.ErrorIs(t, it.Error(), ErrCorruption)
	require.ErrorIs(t, it.Close(), ErrCorruption)
}
