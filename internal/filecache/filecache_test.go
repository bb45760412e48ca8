package filecache

import (
	"errors"
	"io"
	"runtime"
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

// TestGetOpen: GetOpen returns only a reader that is open, with a
// reference that keeps it open past eviction, and never opens one: not
// for a key the cache lacks, nor for one being opened, after a failed
// open, or after Close.
func TestGetOpen(t *testing.T) {
	var open, opens atomic.Int32
	c := New(4)
	k := key(base.FileTypeVlog, 1)
	_, ok := c.GetOpen(k)
	require.False(t, ok, "a key never opened")

	// While another Get opens it.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan Ref)
	go func() {
		h, err := c.Get(k, func() (io.Closer, error) {
			close(started)
			<-release
			return opener(&open, &opens)()
		})
		require.NoError(t, err)
		done <- h
	}()
	<-started
	_, ok = c.GetOpen(k)
	require.False(t, ok, "a reader being opened")
	close(release)
	c.Release(<-done)
	require.EqualValues(t, 1, opens.Load())

	h, ok := c.GetOpen(k)
	require.True(t, ok)
	require.EqualValues(t, 1, opens.Load(), "GetOpen opened a reader")
	c.Evict(k)
	require.False(t, h.Reader().(*fakeReader).closed.Load(), "evicted under its reference")
	_, ok = c.GetOpen(k)
	require.False(t, ok, "an evicted key")
	c.Release(h)
	require.Zero(t, open.Load())

	_, err := c.Get(k, func() (io.Closer, error) { return nil, errors.New("no") })
	require.Error(t, err)
	_, ok = c.GetOpen(k)
	require.False(t, ok, "after a failed open")

	h2, err := c.Get(k, opener(&open, &opens))
	require.NoError(t, err)
	c.Release(h2)
	c.Close()
	_, ok = c.GetOpen(k)
	require.False(t, ok, "after Close")
}

// TestEvictionNeverClosesAHeldReader: readers hit, miss and GetOpen a few
// keys from several goroutines while the bound evicts and others Evict
// and the cache finally closes; no reader is closed while a reference to
// it is held, none twice (fakeReader panics), and all are closed at the
// end. The striped references must not let a reader close under a user
// whose reference sits in a stripe summed early.
func TestEvictionNeverClosesAHeldReader(t *testing.T) {
	var open, opens atomic.Int32
	c := New(3)
	var underUser atomic.Int32
	var wg sync.WaitGroup
	var stop atomic.Bool
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := key(base.FileTypeTable, (i*7+g)%6)
				var r Ref
				var ok bool
				switch {
				case g == 5 && i%5 == 0:
					c.Evict(k)
					continue
				case i%3 == 0:
					r, ok = c.GetOpen(k)
				default:
					var err error
					r, err = c.Get(k, opener(&open, &opens))
					if errors.Is(err, ErrClosed) {
						return
					}
					require.NoError(t, err)
					ok = true
				}
				if !ok {
					continue
				}
				fr := r.Reader().(*fakeReader)
				for range i % 4 {
					if fr.closed.Load() {
						underUser.Add(1)
					}
					runtime.Gosched()
				}
				if fr.closed.Load() {
					underUser.Add(1)
				}
				c.Release(r)
			}
		}()
	}
	for opens.Load() < 20000 {
		runtime.Gosched()
	}
	c.Close()
	stop.Store(true)
	wg.Wait()
	require.Zero(t, underUser.Load(), "readers closed while held")
	require.Zero(t, open.Load(), "readers left open after Close and the last release")
}
