package strata

import (
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func TestVlogSizeMatchesFile(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs, ValueThreshold: 10})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set([]byte{byte(i)}, make([]byte, 100), NoSync))
	}
	require.NoError(t, db.Flush())
	db.mu.Lock()
	v := db.vs.Current()
	db.mu.Unlock()
	require.Len(t, v.Vlogs, 1)
	for num, m := range v.Vlogs {
		st, err := fs.Stat("db/" + base.MakeFilename(base.FileTypeVlog, num))
		require.NoError(t, err)
		require.Equal(t, uint64(st.Size()), m.Size)
		r, err := db.vlogs.get(m)
		require.NoError(t, err)
		require.True(t, r.Finished())
	}
	require.NoError(t, db.Close())
}
