package strata

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// mutation is one change to a model: set k=v, delete k, delete [k, end),
// or merge a ListAppend operand v into k.
type mutation struct {
	kind   byte // 's', 'd', 'r', 'm'
	k, v   string
	end    string
	hasEnd bool
}

func mset(k, v []byte) mutation    { return mutation{kind: 's', k: string(k), v: string(v)} }
func mdel(k []byte) mutation       { return mutation{kind: 'd', k: string(k)} }
func mrange(a, b []byte) mutation  { return mutation{kind: 'r', k: string(a), end: string(b)} }
func mmerge(k, op []byte) mutation { return mutation{kind: 'm', k: string(k), v: string(op)} }

// apply changes m and calls touched (if not nil) before and after each key
// it changes.
func (mu mutation) apply(m model, touched func(k string, after bool)) {
	one := func(k string, f func()) {
		if touched != nil {
			touched(k, false)
		}
		f()
		if touched != nil {
			touched(k, true)
		}
	}
	switch mu.kind {
	case 's':
		one(mu.k, func() { m[mu.k] = mu.v })
	case 'd':
		one(mu.k, func() { delete(m, mu.k) })
	case 'm':
		// A ListAppend operand: appended to the value's bytes.
		one(mu.k, func() { m[mu.k] += mu.v })
	case 'r':
		var keys []string
		for k := range m {
			if k >= mu.k && k < mu.end {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			one(k, func() { delete(m, k) })
		}
	}
}

// historyOp is one acknowledged write (a batch is one op).
type historyOp struct {
	desc string
	muts []mutation
}

func (op historyOp) apply(m model, touched func(string, bool)) {
	for _, mu := range op.muts {
		mu.apply(m, touched)
	}
}

// history records writes in commit order and what was made durable, so a
// recovered database can be checked against every prefix of the history.
type history struct {
	ops []historyOp
	// durable is the length of the prefix known to survive a crash: every op
	// up to the last acknowledged Sync write (with the WAL on) or the last
	// completed Flush.
	durable int
}

func (h *history) add(desc string, muts ...mutation) {
	h.ops = append(h.ops, historyOp{desc, muts})
}

// markDurable records that every op so far survives a crash.
func (h *history) markDurable() { h.durable = len(h.ops) }

// stateAt replays the first n ops.
func (h *history) stateAt(n int) model {
	m := model{}
	for _, op := range h.ops[:n] {
		op.apply(m, nil)
	}
	return m
}

// matchPrefix returns the length p in [h.durable, maxLen] of a prefix whose
// state equals got, or -1. It counts the keys on which the prefix state and
// got differ and updates the count for the keys each op touches, so checking
// every prefix costs about as much as replaying the history once.
func (h *history) matchPrefix(got model, maxLen int) int {
	m := h.stateAt(h.durable)
	differs := func(k string) bool {
		a, okA := m[k]
		b, okB := got[k]
		return okA != okB || a != b
	}
	diff := 0
	for k := range m {
		if differs(k) {
			diff++
		}
	}
	for k := range got {
		if _, ok := m[k]; !ok {
			diff++
		}
	}
	var before bool
	touched := func(k string, after bool) {
		if !after {
			before = differs(k)
			return
		}
		if now := differs(k); now != before {
			if now {
				diff++
			} else {
				diff--
			}
		}
	}
	for p := h.durable; ; p++ {
		if diff == 0 {
			return p
		}
		if p >= maxLen {
			return -1
		}
		h.ops[p].apply(m, touched)
	}
}

// describeMismatch explains how got differs from the durable prefix state.
func (h *history) describeMismatch(got model) string {
	want := h.stateAt(h.durable)
	var diffs []string
	for k, v := range want {
		if gv, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %q", k))
		} else if gv != v {
			diffs = append(diffs, fmt.Sprintf("%q differs", k))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %q", k))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 10 {
		diffs = append(diffs[:10], "...")
	}
	return fmt.Sprintf("durable prefix %d of %d ops; vs durable state: %s", h.durable, len(h.ops), strings.Join(diffs, ", "))
}

// readAll scans a database into a model.
func readAll(t *testing.T, db *DB) (model, error) {
	t.Helper()
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	m := model{}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	return m, it.Close()
}

// writer drives random writes against a DB and records them in a history.
type writer struct {
	rng *rand.Rand
	db  *DB
	h   *history
	// wal reports whether acknowledged Sync writes are durable.
	wal bool
	// bulk: steps begin and end bulk loads (inBulk: one is under way),
	// during which writes skip the WAL and are not synced.
	bulk, inBulk bool
	// merge: writes include ListAppend merge operands (the DB's Merger
	// must be ListAppend).
	merge bool
	// rotate: steps freeze the memtable often (a rotation, as a full
	// memtable does) and flush steps do only that, without waiting for
	// the flush.
	rotate bool
	// ingest: steps ingest small external tables, of keys between the
	// writes' keys (k0042a..), so that most do not overlap a memtable;
	// ingests counts them.
	ingest  bool
	ingests int
	// quiet: no flushes, compactions or range deletions (which overlap
	// most ingests and so flush the memtables): writes pile up in the
	// memtables and their WALs between ingests.
	quiet bool
	// beforeWait, if set, is called before every operation that may wait
	// for the sealer (a Sync write, a flush, a compaction, a bulk load's
	// end), so that a test holding back WAL syncs can let them go.
	beforeWait func()
}

func (w *writer) key() []byte { return []byte(fmt.Sprintf("k%04d", w.rng.IntN(500))) }

func (w *writer) value() []byte {
	n := 1 + w.rng.IntN(200)
	if w.rng.IntN(30) == 0 {
		n = 5000
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte('a' + w.rng.IntN(26))
	}
	return v
}

// step performs one random operation. On error it returns the op that
// failed (it may or may not have reached the disk), unrecorded.
func (w *writer) step() (pending *historyOp, err error) {
	wait := func() {
		if w.beforeWait != nil {
			w.beforeWait()
		}
	}
	if w.rotate && w.rng.IntN(12) == 0 {
		return nil, w.db.writeOp(nil, false, opRotate)
	}
	if w.merge && w.rng.IntN(8) == 0 {
		sync := w.rng.IntN(4) == 0 && !w.inBulk
		if sync {
			wait()
		}
		// Merges into a few hot keys, alone or in a batch of several:
		// replay must apply each operand exactly once.
		b := w.db.NewBatch()
		var op historyOp
		for i := 0; i < 1+w.rng.IntN(6); i++ {
			k := []byte(fmt.Sprintf("k%04d", w.rng.IntN(8)))
			v := w.value()
			elem := ListElement(nil, v[:min(len(v), 1+w.rng.IntN(20))])
			if err := b.Merge(k, elem); err != nil {
				return nil, err
			}
			op.muts = append(op.muts, mmerge(k, elem))
		}
		op.desc = fmt.Sprintf("merge batch of %d", b.Len())
		o := NoSync
		if sync {
			o = Sync
		}
		if err := w.db.Apply(b, o); err != nil {
			return &op, err
		}
		w.h.add(op.desc, op.muts...)
		if sync && w.wal {
			w.h.markDurable()
		}
		return nil, nil
	}
	if w.ingest && w.rng.IntN(25) == 0 {
		wait()
		return w.ingestStep()
	}
	if w.bulk && w.rng.IntN(40) == 0 {
		wait()
		if !w.inBulk {
			w.inBulk = true
			return nil, w.db.BeginBulkLoad()
		}
		w.inBulk = false
		if err = w.db.EndBulkLoad(); err == nil {
			w.h.markDurable() // the whole load is in tables
		}
		return nil, err
	}
	sync := w.rng.IntN(4) == 0 && !w.inBulk
	o := NoSync
	if sync {
		o = Sync
		wait()
	}
	var op historyOp
	r := w.rng.IntN(100)
	if w.quiet && (r >= 75 && r < 80 || r >= 95) {
		r = 0 // a set instead of a range deletion, flush or compaction
	}
	switch {
	case r < 60:
		k, v := w.key(), w.value()
		op = historyOp{fmt.Sprintf("set %s", k), []mutation{mset(k, v)}}
		err = w.db.Set(k, v, o)
	case r < 75:
		k := w.key()
		op = historyOp{fmt.Sprintf("del %s", k), []mutation{mdel(k)}}
		err = w.db.Delete(k, o)
	case r < 80:
		a, b := w.key(), w.key()
		if string(a) > string(b) {
			a, b = b, a
		}
		op = historyOp{fmt.Sprintf("delrange %s-%s", a, b), []mutation{mrange(a, b)}}
		err = w.db.DeleteRange(a, b, o)
	case r < 95:
		b := w.db.NewBatch()
		for i := 0; i < 1+w.rng.IntN(10); i++ {
			k, v := w.key(), w.value()
			if w.rng.IntN(4) == 0 {
				b.Delete(k)
				op.muts = append(op.muts, mdel(k))
			} else {
				b.Set(k, v)
				op.muts = append(op.muts, mset(k, v))
			}
		}
		op.desc = fmt.Sprintf("batch of %d", b.Len())
		err = w.db.Apply(b, o)
	case r < 98:
		if w.rotate {
			return nil, w.db.writeOp(nil, false, opRotate)
		}
		wait()
		err = w.db.Flush()
		if err == nil {
			w.h.markDurable()
		}
		return nil, err
	default:
		a, b := w.key(), w.key()
		if string(a) > string(b) {
			a, b = b, a
		}
		wait()
		return nil, w.db.Compact(a, b)
	}
	if err != nil {
		return &op, err
	}
	w.h.add(op.desc, op.muts...)
	if sync && w.wal {
		w.h.markDurable()
	}
	return nil, nil
}

// ingestStep ingests a table of a few keys after a random write key; a
// successful ingest makes every earlier write durable.
func (w *writer) ingestStep() (*historyOp, error) {
	path := fmt.Sprintf("ext-%d.sst", w.ingests)
	w.ingests++
	tw, err := NewTableWriter(path, &TableWriterOptions{FS: w.db.fs, ValueThreshold: 256})
	if err != nil {
		return nil, err
	}
	base := w.rng.IntN(500)
	op := historyOp{desc: fmt.Sprintf("ingest k%04d.. from %s", base, path)}
	for j := 0; j < 1+w.rng.IntN(5); j++ {
		k, v := []byte(fmt.Sprintf("k%04d%c", base, 'a'+j)), w.value()
		if err := tw.Set(k, v); err != nil {
			return nil, err
		}
		op.muts = append(op.muts, mset(k, v))
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := w.db.Ingest([]string{path}); err != nil {
		return &op, err
	}
	w.h.add(op.desc, op.muts...)
	w.h.markDurable()
	return nil, nil
}
