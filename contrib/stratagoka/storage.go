// Package stratagoka is Strata as the local state store of goka
// (github.com/lovoo/goka), the Go stream processor: a storage.Storage
// over one Strata DB, and a storage.Builder that opens one DB per table
// partition, all sharing one memtable budget and one block cache. It is
// a module of its own, so that the engine does not depend on goka.
//
//	goka.NewProcessor(brokers, graph,
//		goka.WithStorageBuilder(stratagoka.NewBuilder("/var/lib/app/state", nil)))
//
// What it does beyond a plain adapter:
//
//   - Has answers from the tree alone (strata.DB.Has): a separated value
//     is never read to learn that its key exists.
//   - Recovery is a bulk load (strata.DB.BeginBulkLoad): until goka calls
//     MarkRecovered, writes skip the WAL, and MarkRecovered makes the
//     whole recovered state durable with one flush. A crash during
//     recovery keeps a prefix of the recovered writes, with an offset no
//     newer than them, so goka resumes the recovery from there.
//   - The partitions' DBs share a strata.WriteBudget and a block cache
//     (Options), so memory stays bounded however many partitions a
//     process holds.
//   - Options.OnOpen sees each partition's DB as it opens, and returns
//     what to do when it closes: per-partition metrics
//     (strataprom.Register, labelled with topic and partition) survive a
//     partition moving away and back (ExampleOptions_prometheus).
//
// Iteration follows goka's contract (and its LevelDB storage): Next
// before the first pair, Seek landing on the pair (Key valid at once,
// Next moving past it), the offset key never shown, and a limit-less
// range meaning the prefix of start.
package stratagoka

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/lovoo/goka/storage"
	"github.com/strata-db/strata"
)

// offsetKey is where the partition's offset is stored, the key goka's own
// storages use. Iterators skip it.
const offsetKey = "__offset"

// offsetEvery is how often, in SetOffset calls, recovery writes the offset
// key (in its bulk load, so at the cost of a memtable insert); after
// recovery every SetOffset writes it. A crash during recovery keeps an
// offset at most this many messages behind the recovered state, and goka
// replays them: a table's changelog converges whatever the start.
const offsetEvery = 1000

// Storage is goka's storage.Storage over a Strata DB. It is safe for any
// number of concurrent readers and one writer, as goka requires.
type Storage struct {
	db    *strata.DB
	owned bool // Close closes db
	bulk  bool // recover as a bulk load
	// onClose, when set, runs in Close before db closes (Options.OnOpen).
	onClose func()

	offset    atomic.Int64 // the newest offset set
	sinceKey  atomic.Int64 // SetOffset calls since the offset key was written
	recovered atomic.Bool

	mu     sync.Mutex // Open, MarkRecovered and Close
	opened bool
	closed bool
}

var _ storage.Storage = (*Storage)(nil)

// New returns a Storage over db, which the caller keeps and closes after
// the Storage. With bulkRecovery, recovery (Open to MarkRecovered) is a
// bulk load of db.
func New(db *strata.DB, bulkRecovery bool) *Storage {
	return &Storage{db: db, bulk: bulkRecovery}
}

// DB returns the Strata DB under the storage.
func (s *Storage) DB() *strata.DB { return s.db }

// Open starts recovery: with bulk recovery, a bulk load.
func (s *Storage) Open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return strata.ErrClosed
	}
	if s.opened {
		return nil
	}
	s.opened = true
	if s.bulk && !s.recovered.Load() {
		return s.db.BeginBulkLoad()
	}
	return nil
}

// Close writes the offset and closes the DB if the storage owns it (a DB
// closed during a bulk load flushes it first).
func (s *Storage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return strata.ErrClosed
	}
	s.closed = true
	var err error
	if off := s.offset.Load(); off != 0 {
		err = s.putOffset(off)
	}
	if s.onClose != nil {
		s.onClose()
	}
	if s.owned {
		err = errors.Join(err, s.db.Close())
	} else if s.db.BulkLoading() {
		err = errors.Join(err, s.db.EndBulkLoad())
	}
	return err
}

// Has reports whether key has a value, without reading a value log.
func (s *Storage) Has(key string) (bool, error) {
	return s.db.Has([]byte(key))
}

// Get returns the value of key, or nil if it has none.
func (s *Storage) Get(key string) ([]byte, error) {
	v, err := s.db.Get([]byte(key))
	if errors.Is(err, strata.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("strata goka storage: get %q: %w", key, err)
	}
	return v, nil
}

// Set stores value under key (a nil value as an empty one).
func (s *Storage) Set(key string, value []byte) error {
	if err := s.db.Set([]byte(key), value, strata.NoSync); err != nil {
		return fmt.Errorf("strata goka storage: set %q: %w", key, err)
	}
	return nil
}

// Delete removes key.
func (s *Storage) Delete(key string) error {
	if err := s.db.Delete([]byte(key), strata.NoSync); err != nil {
		return fmt.Errorf("strata goka storage: delete %q: %w", key, err)
	}
	return nil
}

// GetOffset returns the partition's offset, or def if none is stored.
// During recovery the newest offset set counts, stored or not.
func (s *Storage) GetOffset(def int64) (int64, error) {
	if !s.recovered.Load() {
		if off := s.offset.Load(); off != 0 {
			return off, nil
		}
	}
	v, err := s.Get(offsetKey)
	if err != nil || v == nil {
		return def, err
	}
	off, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("strata goka storage: offset %q: %w", v, err)
	}
	return off, nil
}

// SetOffset sets the partition's offset: stored at once after recovery,
// every offsetEvery calls during it (and at MarkRecovered and Close).
func (s *Storage) SetOffset(offset int64) error {
	s.offset.Store(offset)
	if !s.recovered.Load() && s.sinceKey.Add(1) < offsetEvery {
		return nil
	}
	s.sinceKey.Store(0)
	return s.putOffset(offset)
}

func (s *Storage) putOffset(offset int64) error {
	return s.Set(offsetKey, strconv.AppendInt(nil, offset, 10))
}

// MarkRecovered ends recovery: it stores the offset and, with bulk
// recovery, ends the bulk load, which returns once the recovered state is
// durable.
func (s *Storage) MarkRecovered() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return strata.ErrClosed
	}
	if off := s.offset.Load(); off != 0 {
		if err := s.putOffset(off); err != nil {
			return err
		}
	}
	if s.db.BulkLoading() {
		if err := s.db.EndBulkLoad(); err != nil {
			return fmt.Errorf("strata goka storage: make the recovered state durable: %w", err)
		}
	}
	s.recovered.Store(true)
	return nil
}

// Iterator iterates over a snapshot of the whole storage.
func (s *Storage) Iterator() (storage.Iterator, error) {
	return s.IteratorWithRange(nil, nil)
}

// IteratorWithRange iterates over the keys in [start, limit) of a
// snapshot; with limit empty, over the keys that start with start (as
// goka's own storages do). A start above limit is an empty range, as in
// goka's LevelDB storage (strata.DB.NewIter refuses such bounds).
func (s *Storage) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	o := &strata.IterOptions{}
	switch {
	case len(limit) > 0:
		if len(start) > 0 {
			o.LowerBound = start
		}
		o.UpperBound = limit
		if bytes.Compare(start, limit) > 0 {
			o.UpperBound = start
		}
	case len(start) > 0:
		// A prefix: the DB's Bloom filters rule tables out when
		// strata.Options.PrefixExtractor makes start a whole prefix.
		o.Prefix = start
	}
	it, err := s.db.NewIter(o)
	if err != nil {
		return nil, fmt.Errorf("strata goka storage: iterator: %w", err)
	}
	return &iterator{it: it}, nil
}

// iterator is goka's storage.Iterator over a Strata iterator. After
// Release, as goka's LevelDB storage does, Next and Seek return false,
// Key and Value nil, and Err the error that ended the iteration, if one
// did, or else, once Next or Seek was called, strata.ErrClosed.
type iterator struct {
	it       *strata.Iterator
	started  bool // Next or Seek was called
	valid    bool
	released bool
	err      error // after Release: what Err returns
}

func (i *iterator) skipOffset() {
	if i.valid && string(i.it.Key()) == offsetKey {
		i.valid = i.it.Next()
	}
}

// Next moves to the next pair: the first one on the first call.
func (i *iterator) Next() bool {
	if i.released {
		return i.afterRelease()
	}
	if !i.started {
		i.started = true
		i.valid = i.it.First()
	} else if i.valid {
		i.valid = i.it.Next()
	}
	i.skipOffset()
	return i.valid
}

// Seek moves to the first pair at or after key and reports whether there
// is one; Key and Value return it at once.
func (i *iterator) Seek(key []byte) bool {
	if i.released {
		return i.afterRelease()
	}
	i.started = true
	i.valid = i.it.SeekGE(key)
	i.skipOffset()
	return i.valid
}

// Key returns the current key (nil when there is none), valid until the
// next move.
func (i *iterator) Key() []byte {
	if !i.valid {
		return nil
	}
	return i.it.Key()
}

// Value returns the current value (nil when there is none), valid until
// the next move.
func (i *iterator) Value() ([]byte, error) {
	if !i.valid {
		return nil, nil
	}
	v := i.it.Value()
	if err := i.it.Error(); err != nil {
		return nil, err
	}
	return v, nil
}

// afterRelease is Next or Seek of a released iterator.
func (i *iterator) afterRelease() bool {
	if i.err == nil {
		i.err = strata.ErrClosed
	}
	return false
}

// Err returns the error that stopped the iteration, if any.
func (i *iterator) Err() error {
	if i.released {
		return i.err
	}
	return i.it.Error()
}

// Release closes the iterator; it is exhausted afterwards. Err keeps the
// error that stopped the iteration, and reports one closing it.
func (i *iterator) Release() {
	if i.released {
		return
	}
	i.released, i.valid = true, false
	i.err = i.it.Close()
}
