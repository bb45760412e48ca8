package strata

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/internal/base"
)

// Time to live. A write with a TTL carries its expiry time in the tree
// entry (kinds SETM and VPTRM: base.EntryMeta ahead of the value or the
// pointer), never in a value log, so whether an entry has expired is known
// from the key side alone:
//
//   - Get, iterators and snapshots treat an expired entry as deleted from
//     the moment it expires (by Options.Clock), older versions included.
//   - Compaction turns an expired entry into a tombstone, or drops it at
//     the bottom of the tree, without reading any value log; the record of
//     a separated value becomes garbage of its value log like that of an
//     overwritten one.

// ErrInvalidTTL is returned for a TTL that is not positive, or whose
// expiry an entry cannot carry (one at or before 1970, from a clock set
// before it).
var ErrInvalidTTL = fmt.Errorf("strata: invalid TTL")

// expiryFrom returns the expiry, in milliseconds since the Unix epoch, of a
// write made at now with time to live ttl. It refuses an expiry an entry
// cannot carry: at or before the epoch (0 means "never" in an entry, and a
// negative one does not encode), as a clock before 1970 gives (a test's
// clock left at time.Time{}), or past base.MaxExpiresAt. Refused here, the
// write fails alone; written, such an entry would fail every read and
// flush of it.
func expiryFrom(now time.Time, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v is not positive", ErrInvalidTTL, ttl)
	}
	at := now.Add(ttl)
	exp := at.UnixMilli()
	if exp <= 0 || exp > base.MaxExpiresAt {
		return 0, fmt.Errorf("%w: a write at %s with TTL %v would expire at %s, and expiries run from 1970 on (Options.Clock)",
			ErrInvalidTTL, now.UTC().Format(time.RFC3339), ttl, at.UTC().Format(time.RFC3339))
	}
	return exp, nil
}

// SetWithTTL adds key=value that expires ttl after now (by the batch's
// clock: the DB's Options.Clock for a batch from DB.NewBatch).
func (b *Batch) SetWithTTL(key, value []byte, ttl time.Duration) error {
	clock := b.clock
	if clock == nil {
		clock = time.Now
	}
	exp, err := expiryFrom(clock(), ttl)
	if err != nil {
		return err
	}
	return b.addSetMeta(key, value, base.EntryMeta{ExpiresAt: exp})
}

// addSetMeta adds a SETM entry: metadata, then the value.
func (b *Batch) addSetMeta(key, value []byte, m base.EntryMeta) error {
	if err := checkValueSize("value", len(value)); err != nil {
		return err
	}
	var mb [2 * 10]byte
	meta := m.Append(mb[:0])
	buf := make([]byte, 0, len(meta)+len(value))
	buf = append(append(buf, meta...), value...)
	user := b.userBytes
	if err := b.add(base.KindSetMeta, key, buf, true); err != nil {
		return err
	}
	b.userBytes = user + uint64(len(key)+len(value))
	return nil
}

// SetWithTTL writes key=value, which expires ttl after now (by
// Options.Clock): from then on Get, iterators and snapshots see no value
// for key, and compaction removes the entry without reading its value.
func (d *DB) SetWithTTL(key, value []byte, ttl time.Duration, o *WriteOptions) error {
	if err := d.checkWritable(); err != nil {
		return err
	}
	b := batchPool.Get().(*Batch)
	b.Reset()
	b.clock = d.opts.Clock
	err := b.SetWithTTL(key, value, ttl)
	if err == nil {
		err = d.write(b, o.sync())
	}
	if cap(b.repr) <= 1<<20 {
		batchPool.Put(b)
	}
	return err
}

// nowMillis returns the DB clock's time in milliseconds since the epoch.
func (d *DB) nowMillis() int64 { return d.opts.Clock().UnixMilli() }

// withDefaultTTL returns b, or, with Options.DefaultTTL set, a copy of b in
// which every plain set expires DefaultTTL after now. The copy is dst.
func (d *DB) withDefaultTTL(b, dst *Batch) (*Batch, error) {
	ttl := d.opts.DefaultTTL
	if ttl <= 0 {
		return b, nil
	}
	r, err := b.reader()
	if err != nil {
		return nil, err
	}
	exp, err := expiryFrom(d.opts.Clock(), ttl)
	if err != nil {
		return nil, err
	}
	meta := base.EntryMeta{ExpiresAt: exp}
	dst.Reset()
	for {
		kind, key, value, ok, err := r.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if kind == base.KindSet {
			err = dst.addSetMeta(key, value, meta)
		} else {
			err = dst.add(kind, key, value, kind != base.KindDelete)
		}
		if err != nil {
			return nil, err
		}
	}
	dst.userBytes = b.userBytes
	return dst, nil
}

// CompactionFilter decides, during flushes and compactions, whether a key
// is deleted (see Options.CompactionFilter).
type CompactionFilter func(key, value []byte, separated bool) (remove bool)

// userFilter adapts Options.CompactionFilter to compaction's hook. A
// panic in the user's filter keeps the key (and is logged): the filter
// is asked again by later compactions, and a key kept is never a wrong
// value, while a panic would kill the process from a background flush.
type userFilter struct {
	f   CompactionFilter
	log *slog.Logger
}

// filter calls the user's filter, keeping the key on a panic.
func (u userFilter) filter(key, value []byte, separated bool) (remove bool) {
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("compaction filter panicked; key kept", "key", fmt.Sprintf("%q", key), "panic", fmt.Sprint(r))
			remove = false
		}
	}()
	return u.f(key, value, separated)
}

func (u userFilter) Filter(k base.InternalKey, value []byte) (compaction.Decision, []byte) {
	_, v, err := base.SplitEntry(k.Kind(), value)
	if err != nil {
		return compaction.Keep, nil
	}
	sep := k.Kind().IsPointer()
	if sep {
		v = nil
	}
	if u.filter(k.UserKey, v, sep) {
		return compaction.Remove, nil
	}
	return compaction.Keep, nil
}

// compactionFilter returns the user's filter as compaction's, or nil.
func (d *DB) compactionFilter() compaction.Filter {
	if d.opts.CompactionFilter == nil {
		return nil
	}
	return userFilter{d.opts.CompactionFilter, d.opts.Logger}
}
