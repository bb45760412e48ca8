package strata

import (
	"fmt"
	"testing"

	"github.com/strata-db/strata/compaction"
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
	block, ok, err := r.MetaBlock(compaction.VlogRefsBlock)
	require.NoError(t, err)
	require.True(t, ok)
	refs, err := compaction.DecodeVlogRefs(block)
	require.NoError(t, err)
	require.Len(t, refs, len(v.Vlogs))
	for _, ref := range refs {
		m := v.Vlogs[ref.FileNum]
		require.NotNil(t, m)
		require.Equal(t, m.Records, ref.Pointers)
		require.Equal(t, m.Size-vlog.HeaderLen-vlog.FooterLen, ref.Bytes, "every record of %s is referenced", ref.FileNum)
	}
	require.NoError(t, r.Close())

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
