// Package filecache keeps open the readers of a database's immutable files
// (tables and value logs) under one bound on open files.
//
// A reader is opened on first use and shared by every later one. The cache
// holds at most MaxOpen readers; past that it closes the least recently used
// ones that nobody is using (a CLOCK approximation of LRU: a hit only sets a
// bit, so hits share a read lock). A reader in use is never closed under its
// user: each Get takes a reference, the cache holds one of its own while the
// reader is cached, and the reader is closed when the last one is released.
// So the bound can be exceeded only by readers that are in use at the
// moment (an iterator over many files holds one per file it is reading).
//
// The cache does not know what the readers are: a Key names the file (its
// type and number) and an Opener makes its reader. It does not delete
// files either; Evict forgets a file the caller has deleted.
package filecache

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// ErrClosed is returned by Get after Close. It matches base.ErrClosed.
var ErrClosed = fmt.Errorf("filecache: %w", base.ErrClosed)

// Key names one file.
type Key struct {
	Type base.FileType
	Num  base.FileNum
}

// Opener opens the reader of a file. The reader's Close releases it.
type Opener func() (io.Closer, error)

// Handle is a reference to a cached reader. Release it when done.
type Handle struct {
	key    Key
	ready  chan struct{}
	reader io.Closer
	err    error
	refs   atomic.Int32
	used   atomic.Bool
	// opened is set once reader is open (after which ready is closed), so
	// that a hit need not receive from ready, which locks the channel.
	opened atomic.Bool
}

// Reader returns the reader; it stays open until the handle is released.
func (h *Handle) Reader() io.Closer { return h.reader }

// Cache is a bounded set of open readers, safe for concurrent use.
type Cache struct {
	maxOpen int

	mu     sync.RWMutex
	files  map[Key]*Handle
	hand   []Key // clock order of the cached readers
	handAt int
	closed bool
}

// New returns a cache that keeps at most maxOpen readers open (at least 1).
func New(maxOpen int) *Cache {
	return &Cache{maxOpen: max(1, maxOpen), files: make(map[Key]*Handle)}
}

// Get returns the reader of key with a reference the caller must Release,
// opening it with open on a miss. Concurrent misses on one key open it once.
// Failures are not remembered: the next Get tries again. After Close, Get
// fails with ErrClosed.
func (c *Cache) Get(key Key, open Opener) (*Handle, error) {
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return nil, ErrClosed
	}
	h := c.files[key]
	if h != nil {
		h.hit()
	}
	c.mu.RUnlock()
	if h != nil && h.opened.Load() {
		return h, nil
	}
	if h == nil {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if h = c.files[key]; h == nil {
			h = &Handle{key: key, ready: make(chan struct{})}
			h.refs.Store(2) // the cache's and the caller's
			c.files[key] = h
			c.hand = append(c.hand, key)
			victims := c.evictLocked()
			c.mu.Unlock()
			c.Release(victims...)
			h.reader, h.err = open()
			if h.err != nil {
				h.reader = nil
			} else {
				h.opened.Store(true)
			}
			close(h.ready)
			if h.err != nil {
				err := h.err
				c.forget(h)
				c.Release(h)
				return nil, err
			}
			return h, nil
		}
		h.refs.Add(1)
		h.used.Store(true)
		c.mu.Unlock()
	}
	<-h.ready
	if h.err != nil {
		err := h.err
		c.Release(h)
		return nil, err
	}
	return h, nil
}

// GetOpen returns the reader of key with a reference the caller must
// Release if it is open in the cache, and nil otherwise: it never opens a
// file nor waits for one being opened.
func (c *Cache) GetOpen(key Key) *Handle {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h := c.files[key]
	if c.closed || h == nil || !h.opened.Load() {
		return nil
	}
	h.hit()
	return h
}

// hit takes a reference to h, found in the cache, and marks it used.
func (h *Handle) hit() {
	h.refs.Add(1)
	if !h.used.Load() {
		// Only the first hit since the clock hand passed writes.
		h.used.Store(true)
	}
}

// Release drops references; the last one closes the reader.
func (c *Cache) Release(hs ...*Handle) {
	for _, h := range hs {
		if h.refs.Add(-1) == 0 {
			<-h.ready
			if h.reader != nil {
				h.reader.Close()
			}
		}
	}
}

// evictLocked takes readers out of the cache until it holds at most
// maxOpen, skipping recently used ones once (CLOCK). It returns them for
// release outside the lock. c.mu held for writing.
func (c *Cache) evictLocked() []*Handle {
	var victims []*Handle
	for scans := 0; len(c.files) > c.maxOpen && scans < 2*len(c.hand)+1; scans++ {
		if c.handAt >= len(c.hand) {
			c.handAt = 0
		}
		key := c.hand[c.handAt]
		h := c.files[key]
		if h == nil {
			c.hand = append(c.hand[:c.handAt], c.hand[c.handAt+1:]...)
			continue
		}
		if h.used.Swap(false) {
			c.handAt++
			continue
		}
		delete(c.files, key)
		c.hand = append(c.hand[:c.handAt], c.hand[c.handAt+1:]...)
		victims = append(victims, h)
	}
	return victims
}

// forget removes h from the cache if it is still there, dropping the
// cache's reference.
func (c *Cache) forget(h *Handle) {
	c.mu.Lock()
	cached := c.files[h.key] == h
	if cached {
		delete(c.files, h.key)
	}
	c.mu.Unlock()
	if cached {
		c.Release(h)
	}
}

// Evict forgets the reader of key (a file the caller deleted). Users still
// holding it finish first: it is closed when the last one releases it.
func (c *Cache) Evict(key Key) {
	c.mu.RLock()
	h := c.files[key]
	c.mu.RUnlock()
	if h != nil {
		c.forget(h)
	}
}

// Len returns the number of readers cached (in use or not), and of them
// those of type t.
func (c *Cache) Len(t base.FileType) (all, ofType int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k := range c.files {
		if k.Type == t {
			ofType++
		}
	}
	return len(c.files), ofType
}

// Close forgets every reader (each closes once its users release it) and
// makes later Gets fail with ErrClosed.
func (c *Cache) Close() {
	c.mu.Lock()
	files := c.files
	c.files = make(map[Key]*Handle)
	c.hand = nil
	c.closed = true
	c.mu.Unlock()
	for _, h := range files {
		c.Release(h)
	}
}

// OpenLive opens a file that the manifest names, for a reader. Its absence
// is corruption of the database (what names it says it exists), reported
// as such; what says what the file is ("table", "value log").
func OpenLive(fs vfs.FS, dirname, name, what string) (vfs.File, error) {
	f, err := fs.Open(fs.PathJoin(dirname, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.CorruptionErrorf(name, -1, "%s is in the manifest but missing from the directory", what)
		}
		return nil, fmt.Errorf("strata: open %s %s: %w", what, name, err)
	}
	return f, nil
}
