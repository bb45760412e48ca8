package vlog

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/vfs"
)

// TestCrash writes a value log on the in-memory filesystem and simulates
// power loss before and after Finish, keeping a random part of unsynced
// data. Before Finish, the file that survives is unfinished: either its
// header is incomplete (NewReader fails cleanly) or the scan returns a
// prefix of the records without an error. After Finish every record is
// there and the file is finished.
func TestCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	recs := genRecords(rng, 150, true)
	seeds := 60
	if raceEnabled {
		seeds = 15
	}
	for seed := range seeds {
		fs := vfs.NewMem()
		require.NoError(t, fs.MkdirAll("db", 0o755))
		syncRoot(t, fs) // the directory itself must survive the crash
		name := fs.PathJoin("db", testFileName)
		f, err := fs.Create(name)
		require.NoError(t, err)
		d, err := fs.OpenDir("db")
		require.NoError(t, err)
		require.NoError(t, d.Sync())
		require.NoError(t, d.Close())

		w := NewWriter(f, testFileNum)
		ptrs := make([]Pointer, len(recs))
		for i, r := range recs {
			ptrs[i], err = w.Add(r.key, r.value)
			require.NoError(t, err)
		}
		finish := seed%3 == 0
		if finish {
			require.NoError(t, w.Finish())
		}
		crashed := fs.CrashClone(vfs.CrashOptions{TornWrites: true, Rand: rand.New(rand.NewPCG(uint64(seed), 1))})
		if !finish {
			require.NoError(t, w.Abort())
		}

		st, err := crashed.Stat(name)
		require.NoError(t, err)
		cf, err := crashed.Open(name)
		require.NoError(t, err)
		r, err := NewReader(cf, testFileNum, st.Size(), ReaderOptions{})
		if err != nil {
			require.False(t, finish)
			require.Less(t, st.Size(), int64(HeaderLen))
			requireCorruption(t, err, 0)
			require.NoError(t, cf.Close())
			continue
		}
		require.Equal(t, finish, r.Finished(), "seed %d", seed)
		got, _, err := scanAll(r)
		require.NoError(t, err)
		n := 0
		for n < len(ptrs) && ptrs[n].End() <= uint64(st.Size()) {
			n++
		}
		requireRecs(t, recs[:n], got, "seed", seed)
		if finish {
			require.Equal(t, len(recs), n)
		}
		for i := range n {
			v, err := r.Get(ptrs[i], recs[i].key)
			require.NoError(t, err)
			require.Equal(t, recs[i].value, v)
		}
		require.NoError(t, r.Close())
	}
}

// syncRoot makes the entry of a directory made in the root durable.
func syncRoot(t *testing.T, fs vfs.FS) {
	t.Helper()
	d, err := fs.OpenDir("")
	require.NoError(t, err)
	require.NoError(t, d.Sync())
	require.NoError(t, d.Close())
}
