package strata

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestWALFileOrder writes chunks of many sizes (some far above the spare
// buffer limit) while a flusher goroutine keeps flushing: the file must
// hold exactly the bytes written, in order.
func TestWALFileOrder(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("wal")
	require.NoError(t, err)
	w := newWALFile(&slowFile{File: f})
	var want bytes.Buffer
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				require.NoError(t, w.flushPending())
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		n := rng.IntN(2000)
		if i%500 == 0 {
			n = 6 << 20 // grows pending past the spare limit
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(i + j)
		}
		want.Write(p)
		_, err := w.Write(p)
		require.NoError(t, err)
		if i%700 == 0 {
			require.NoError(t, w.Sync())
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, w.Close())
	r, err := fs.Open("wal")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want.Bytes(), got), "file differs from what was written (%d vs %d bytes)", len(got), want.Len())
}

// slowFile writes in two halves with a pause between, so that Writes to
// the walFile land while a flush is in the middle of its system call.
type slowFile struct{ vfs.File }

func (f *slowFile) Write(p []byte) (int, error) {
	half := len(p) / 2
	n, err := f.File.Write(p[:half])
	if err != nil {
		return n, err
	}
	time.Sleep(20 * time.Microsecond)
	m, err := f.File.Write(p[half:])
	return n + m, err
}

// TestWALFileSyncAfterClose: a Sync that reaches a WAL after Close (an
// ingest's presync racing a rotation) does nothing and leaves no error
// behind for the WAL's other users, while a sync that fails on an open
// WAL still sticks.
func TestWALFileSyncAfterClose(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("wal")
	require.NoError(t, err)
	w := newWALFile(f)
	require.NoError(t, w.Close())
	require.NoError(t, w.Sync())
	w.mu.Lock()
	require.NoError(t, w.err)
	w.mu.Unlock()

	f, err = fs.Create("wal2")
	require.NoError(t, err)
	require.NoError(t, f.Close()) // the file fails under an open walFile
	w = newWALFile(f)
	require.Error(t, w.Sync())
	w.mu.Lock()
	require.Error(t, w.err, "a failed sync of an open WAL sticks")
	w.mu.Unlock()
}
