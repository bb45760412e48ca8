// Package filecache keeps open the readers of a database's immutable files
// (tables and value logs) under one bound on open files.
//
// A reader is opened on first use and shared by every later one. The cache
// holds at most MaxOpen readers; past that it closes the least recently used
// ones that nobody is using (a CLOCK approximation of LRU: a hit only sets a
// bit, so hits take no lock; see Handle). A reader in use is never closed
// under its user: each Get takes a reference, the cache holds one of its own
// while the reader is cached, and the reader is closed when the last one is
// released.
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
	"github.com/strata-db/strata/internal/stripe"
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

// Handle is a cached reader and the references to it.
//
// A hit touches no cache line that other readers write: the cache's index
// is a sync.Map (lock-free loads), and the users' references are counted
// in stripes (stripe.Refs), each Ref giving back to the stripe it took
// from. With one lock and one count per file, two readers of the same
// table moved those lines between the processors three times a read
// (measured: 7-20% of two readers' time, the more the farther apart the
// processors). The cache's reference is the Refs' owner's, dropped when
// it lets the reader go; the reader is closed once, when it is dropped
// and no user holds it. A hit checks after Acquire that the handle was
// not dropped, and backs off if it was.
type Handle struct {
	// refs come first: a Handle is 640 bytes, a size Go allocates at
	// multiples of 64, so each stripe's count has a line of its own and
	// the fields after, which every hit reads, are on lines no hit writes.
	refs   stripe.Refs
	key    Key
	ready  chan struct{}
	reader io.Closer
	err    error
	// opened is set once reader is open (after which ready is closed), so
	// that a hit need not receive from ready, which locks the channel.
	opened atomic.Bool
	// used is the CLOCK bit: set by hits, cleared by the hand.
	used atomic.Bool
}

// Ref is a user's reference to a cached reader: it stays open until the
// Ref is released (Cache.Release). The zero Ref holds nothing.
type Ref struct {
	h      *Handle
	stripe int
}

// Reader returns the reader.
func (r Ref) Reader() io.Closer { return r.h.reader }

// ref adds a user's reference in the calling goroutine's stripe.
func (h *Handle) ref() Ref { return Ref{h, h.refs.Acquire()} }

// unref takes a user's reference back and closes the reader if it was the
// last one of a dropped handle.
func (r Ref) unref() {
	if r.h.refs.Release(r.stripe) {
		r.h.close()
	}
}

// drop lets go of the cache's reference.
func (h *Handle) drop() {
	if h.refs.Drop() {
		h.close()
	}
}

// close closes the reader, once it is open (stripe.Refs says when).
func (h *Handle) close() {
	<-h.ready
	if h.reader != nil {
		h.reader.Close()
	}
}

// Cache is a bounded set of open readers, safe for concurrent use.
type Cache struct {
	maxOpen int

	// index maps a Key to its *Handle for lock-free hits; files, the
	// clock and every change of index are under mu.
	index  sync.Map
	closed atomic.Bool

	mu     sync.Mutex
	files  map[Key]*Handle
	hand   []Key // clock order of the cached readers
	handAt int
}

// New returns a cache that keeps at most maxOpen readers open (at least 1).
func New(maxOpen int) *Cache {
	return &Cache{maxOpen: max(1, maxOpen), files: make(map[Key]*Handle)}
}

// hit returns a reference to the cached handle of key, if there is one
// the cache still holds.
func (c *Cache) hit(key Key) (Ref, bool) {
	v, ok := c.index.Load(key)
	if !ok {
		return Ref{}, false
	}
	h := v.(*Handle)
	r := h.ref()
	if h.refs.Dropped() {
		r.unref() // evicted under us
		return Ref{}, false
	}
	if !h.used.Load() {
		// Only the first hit since the clock hand passed writes.
		h.used.Store(true)
	}
	return r, true
}

// Get returns the reader of key with a reference the caller must Release,
// opening it with open on a miss. Concurrent misses on one key open it once.
// Failures are not remembered: the next Get tries again. After Close, Get
// fails with ErrClosed.
func (c *Cache) Get(key Key, open Opener) (Ref, error) {
	if c.closed.Load() {
		return Ref{}, ErrClosed
	}
	r, ok := c.hit(key)
	if ok && r.h.opened.Load() {
		return r, nil
	}
	if !ok {
		c.mu.Lock()
		if c.closed.Load() {
			c.mu.Unlock()
			return Ref{}, ErrClosed
		}
		h := c.files[key]
		if h == nil {
			h = &Handle{key: key, ready: make(chan struct{})}
			r = h.ref() // the caller's; the cache's is !dropped
			c.files[key] = h
			c.index.Store(key, h)
			c.hand = append(c.hand, key)
			victims := c.evictLocked()
			c.mu.Unlock()
			for _, v := range victims {
				v.drop()
			}
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
				r.unref()
				return Ref{}, err
			}
			return r, nil
		}
		// Still cached (a hit raced its eviction's view, or it is being
		// opened): under mu it cannot be dropped meanwhile.
		r = h.ref()
		h.used.Store(true)
		c.mu.Unlock()
	}
	<-r.h.ready
	if r.h.err != nil {
		err := r.h.err
		r.unref()
		return Ref{}, err
	}
	return r, nil
}

// GetOpen returns the reader of key with a reference the caller must
// Release if it is open in the cache, and false otherwise: it never opens
// a file nor waits for one being opened.
func (c *Cache) GetOpen(key Key) (Ref, bool) {
	if c.closed.Load() {
		return Ref{}, false
	}
	r, ok := c.hit(key)
	if !ok {
		return Ref{}, false
	}
	if !r.h.opened.Load() {
		r.unref()
		return Ref{}, false
	}
	return r, true
}

// Release drops references; the last one of a reader the cache no longer
// holds closes it. Zero Refs are ignored.
func (c *Cache) Release(rs ...Ref) {
	for _, r := range rs {
		if r.h != nil {
			r.unref()
		}
	}
}

// evictLocked takes readers out of the cache until it holds at most
// maxOpen, skipping recently used ones once (CLOCK). It returns them for
// dropping outside the lock. c.mu held.
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
		c.index.Delete(key)
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
		c.index.Delete(h.key)
	}
	c.mu.Unlock()
	if cached {
		h.drop()
	}
}

// Evict forgets the reader of key (a file the caller deleted). Users still
// holding it finish first: it is closed when the last one releases it.
func (c *Cache) Evict(key Key) {
	c.mu.Lock()
	h := c.files[key]
	c.mu.Unlock()
	if h != nil {
		c.forget(h)
	}
}

// Len returns the number of readers cached (in use or not), and of them
// those of type t.
func (c *Cache) Len(t base.FileType) (all, ofType int) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
	c.index.Clear()
	c.hand = nil
	c.closed.Store(true)
	c.mu.Unlock()
	for _, h := range files {
		h.drop()
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
