package strata

import (
	"fmt"
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
