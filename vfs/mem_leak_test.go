package vfs

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemLeakMetadata: with LeakMetadata, a crash keeps the durable
// entries plus a prefix, in order, of the directory changes made since:
// a file whose creation leaked with a rename after it never appears
// without that creation's earlier siblings, and a rename leaks whole.
// Changes a directory sync made durable are not undone or replayed.
func TestMemLeakMetadata(t *testing.T) {
	fs := NewMem()
	require.NoError(t, fs.MkdirAll("d", 0o755))
	syncDir(t, fs, "")
	for _, n := range []string{"old", "gone", "moved"} {
		f := create(t, fs, "d/"+n)
		require.NoError(t, f.Close())
	}
	syncDir(t, fs, "d")
	// Made durable and then changed again, durably: must stay as synced.
	f := create(t, fs, "d/synced")
	require.NoError(t, f.Close())
	syncDir(t, fs, "d")
	require.NoError(t, fs.Remove("d/synced"))
	syncDir(t, fs, "d")

	// The changes that may leak, in order, and what d holds after each.
	desc := func(fs *MemFS) []string {
		names, err := fs.List("d")
		require.NoError(t, err)
		if slices.Contains(names, "sub") {
			sub, err := fs.List("d/sub")
			require.NoError(t, err)
			for _, n := range sub {
				names = append(names, "sub/"+n)
			}
		}
		return names
	}
	states := [][]string{desc(fs)}
	step := func(do func()) {
		do()
		states = append(states, desc(fs))
	}
	step(func() { require.NoError(t, create(t, fs, "d/a").Close()) })
	step(func() { require.NoError(t, fs.Remove("d/gone")) })
	step(func() { require.NoError(t, fs.Rename("d/moved", "d/renamed")) })
	step(func() { require.NoError(t, create(t, fs, "d/b").Close()) })
	step(func() { require.NoError(t, fs.MkdirAll("d/sub", 0o755)) })
	step(func() { require.NoError(t, create(t, fs, "d/sub/c").Close()) })

	seen := map[int]bool{}
	for seed := range uint64(300) {
		got := desc(fs.CrashClone(CrashOptions{LeakMetadata: true, Rand: rand.New(rand.NewPCG(seed, 1))}))
		i := slices.IndexFunc(states, func(s []string) bool { return slices.Equal(s, got) })
		require.GreaterOrEqual(t, i, 0, "seed %d: %v is no prefix of the changes %v", seed, got, states)
		seen[i] = true
	}
	require.True(t, seen[0], "sometimes nothing leaks")
	require.True(t, seen[len(states)-1], "sometimes everything leaks")
	require.Greater(t, len(seen), 4, "prefixes in between: %v", seen)

	// Without the option, only the synced entries.
	names, err := fs.CrashClone(CrashOptions{}).List("d")
	require.NoError(t, err)
	require.Equal(t, []string{"gone", "moved", "old"}, names)
	// A sync of d makes its changes durable; the one in d/sub can still
	// leak or not.
	syncDir(t, fs, "d")
	for seed := range uint64(20) {
		names, err := fs.CrashClone(CrashOptions{LeakMetadata: true, Rand: rand.New(rand.NewPCG(seed, 2))}).List("d")
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "old", "renamed", "sub"}, names)
	}
}

// TestMemZeroedPages: with ZeroedPages, the synced part of a file is
// intact and every page of the unsynced part it keeps holds either its data
// or zeros; some crashes keep a zeroed page with data after it.
func TestMemZeroedPages(t *testing.T) {
	fs := NewMem()
	f := create(t, fs, "f")
	const synced = 2*PageSize + 100
	data := bytes.Repeat([]byte("0123456789abcdef"), 12*PageSize/16)
	_, err := f.Write(data[:synced])
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write(data[synced:])
	require.NoError(t, err)
	syncDir(t, fs, "")

	holes := 0
	for seed := range uint64(200) {
		got := []byte(readFile(t, fs.CrashClone(CrashOptions{ZeroedPages: true, Rand: rand.New(rand.NewPCG(seed, 3))}), "f"))
		require.GreaterOrEqual(t, len(got), synced)
		require.Equal(t, data[:synced], got[:synced], "seed %d: synced data changed", seed)
		zeroBefore := false
		for p := synced; p < len(got); {
			end := min((p/PageSize+1)*PageSize, len(got))
			piece := got[p:end]
			zero := !slices.ContainsFunc(piece, func(b byte) bool { return b != 0 })
			if !zero {
				require.Equal(t, data[p:end], piece, "seed %d: page at %d is neither its data nor zeros", seed, p)
				if zeroBefore {
					holes++
				}
			}
			zeroBefore = zeroBefore || zero
			p = end
		}
	}
	require.Positive(t, holes, "no crash kept data after a zeroed page")
}
