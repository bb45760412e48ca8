package filecache

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// fakeReader counts how many readers are open.
type fakeReader struct {
	open   *atomic.Int32
	closed atomic.Bool
}

func (r *fakeReader) Close() error {
	if r.closed.Swap(true) {
		panic("closed twice")
	}
	r.open.Add(-1)
	return nil
}

func opener(open, opens *atomic.Int32) Opener {
	return func() (io.Closer, error) {
		open.Add(1)
		opens.Add(1)
		return &fakeReader{open: open}, nil
	}
}

func key(t base.FileType, n int) Key { return Key{Type: t, Num: base.FileNum(n)} }

// TestBound: readers nobody uses are closed past the bound, whatever their
// type; one in use stays open until released.
func TestBound(t *testing.T) {
	var open, opens atomic.Int32
	c := New(4)
	held, err := c.Get(key(base.FileTypeVlog, 0), opener(&open, &opens))
	require.NoError(t, err)
	for i := 1; i <= 20; i++ {
		typ := base.FileTypeTable
		if i%2 == 0 {
			typ = base.FileTypeVlog
		}
		h, err := c.Get(key(typ, i), opener(&open, &opens))
		require.NoError(t, err)
		c.Release(h)
		require.LessOrEqual(t, int(open.Load()), 5, "the bound, plus the reader in use")
	}
	require.False(t, held.Reader().(*fakeReader).closed.Load(), "a reader in use was closed")
	c.Release(held)
	all, _ := c.Len(base.FileTypeVlog)
	require.LessOrEqual(t, all, 4)
	c.Close()
	require.Zero(t, open.Load())
	_, err = c.Get(key(base.FileTypeTable, 1), opener(&open, &opens))
	require.ErrorIs(t, err, base.ErrClosed)
}

// TestHitsShareOneReader: concurrent Gets of one key open it once.
func TestHitsShareOneReader(t *testing.T) {
	var open, opens atomic.Int32
	c := New(16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				h, err := c.Get(key(base.FileTypeTable, i%4), opener(&open, &opens))
				if err != nil {
					t.Error(err)
					return
				}
				c.Release(h)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(4), opens.Load())
	c.Close()
	require.Zero(t, open.Load())
}

// TestFailedOpenNotRemembered: an open that fails is retried by the next
// Get.
func TestFailedOpenNotRemembered(t *testing.T) {
	c := New(4)
	boom := errors.New("boom")
	_, err := c.Get(key(base.FileTypeTable, 1), func() (io.Closer, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	var open, opens atomic.Int32
	h, err := c.Get(key(base.FileTypeTable, 1), opener(&open, &opens))
	require.NoError(t, err)
	c.Release(h)
	require.Equal(t, int32(1), opens.Load())
	c.Close()
}

// TestEvictWhileInUse: an evicted reader closes when its last user
// releases it, and the next Get opens a new one.
func TestEvictWhileInUse(t *testing.T) {
	var open, opens atomic.Int32
	c := New(4)
	h, err := c.Get(key(base.FileTypeVlog, 7), opener(&open, &opens))
	require.NoError(t, err)
	c.Evict(key(base.FileTypeVlog, 7))
	require.Equal(t, int32(1), open.Load())
	c.Release(h)
	require.Zero(t, open.Load())
	h, err = c.Get(key(base.FileTypeVlog, 7), opener(&open, &opens))
	require.NoError(t, err)
	require.Equal(t, int32(2), opens.Load())
	c.Release(h)
	c.Close()
	require.Zero(t, open.Load())
}
