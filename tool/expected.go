package tool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/strata-db/strata"
)

// The expected state of a stress run lives in a file mapped into memory
// (MAP_SHARED), so that what the stress process recorded survives its
// SIGKILL (the pages belong to the kernel's page cache) and the crashtest
// parent, and the next stress process, can verify the whole database
// against it.
//
// File layout (little-endian, native alignment):
//
//	+----------------------------------+ 0
//	| magic "STRESSv1" (8)             |
//	| keys (u64)                       |
//	| acks (u64): writes acknowledged  |
//	| synced (u64): acks made durable  |
//	| syncAcks, verified, cycles (u64) |
//	| (pad to 64)                      |
//	+----------------------------------+ 64
//	| slot 0 | slot 1 | ...            |  one per key, slotLen bytes
//	+----------------------------------+
//
// A slot holds two copies of a keyState and a selector (u32) naming the
// current one. Only the goroutine holding the key's lock writes a slot:
// it fills the other copy and then flips the selector with one atomic
// store, so a kill at any moment leaves a whole state.
//
// Every write of a key gets the next id of that key (ids only grow, across
// restarts too); value(key, id) is a pure function, so a value read back
// names the write that made it. A key's state says which ids a read after
// a crash may find:
//
//   - pending: the write in flight (issued, not acknowledged): it may or
//     may not have happened;
//   - latest: the last acknowledged write;
//   - durable: the last write known durable (acknowledged with Sync, or
//     followed by a Sync write or a flush acknowledged later). A key
//     written without Sync since is lossy: a crash may leave any of its
//     ids in (durable, latest], or durable itself, since the WAL is a
//     prefix of the writes;
//   - lastAck: the ack number of the key's last NoSync write; once the
//     header's synced count reaches it, latest is durable.
//
// An id of 0 is no write (the key is absent).

const (
	expectedMagic  = "STRESSv1"
	expectedHeader = 64
	stateLen       = 32
	slotLen        = 8 + 2*stateLen
)

// keyState flags.
const (
	flagLossy        = 1 << iota // NoSync writes since durable, not yet known durable
	flagDurableDel               // the durable write was a deletion (or none)
	flagLatestDel                // the latest write was a deletion (or none)
	flagDelInRange               // a deletion among the lossy writes
	flagPendingValid             // a write is in flight
	flagPendingDel               // ... and it is a deletion
)

type keyState struct {
	durable, latest, pending, maxID uint32
	lastAck                         uint64
	flags                           uint32
}

// expectedState is the mapped file.
type expectedState struct {
	f    *os.File
	data []byte
	keys int
}

// openExpected maps the expected-state file path, creating it for keys
// keys if it does not exist.
func openExpected(path string, keys int) (*expectedState, bool, error) {
	size := int64(expectedHeader + slotLen*keys)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	created := false
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		created = true
		if err == nil {
			err = f.Truncate(size)
		}
	}
	if err != nil {
		return nil, false, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("mmap %s: %w", path, err)
	}
	e := &expectedState{f: f, data: data}
	if created {
		copy(data, expectedMagic)
		binary.LittleEndian.PutUint64(data[8:], uint64(keys))
		for i := 0; i < keys; i++ {
			e.keys = keys
			e.put(i, keyState{flags: flagDurableDel | flagLatestDel})
		}
	}
	if string(data[:8]) != expectedMagic {
		e.close()
		return nil, false, fmt.Errorf("%s is not an expected-state file", path)
	}
	e.keys = int(binary.LittleEndian.Uint64(data[8:]))
	if int64(expectedHeader+slotLen*e.keys) != st.Size() {
		e.close()
		return nil, false, fmt.Errorf("%s: size %d does not fit %d keys", path, st.Size(), e.keys)
	}
	return e, created, nil
}

func (e *expectedState) close() error {
	err := syscall.Munmap(e.data)
	if cerr := e.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (e *expectedState) counter(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&e.data[16+8*i]))
}

// The header's counters.
func (e *expectedState) acks() *atomic.Uint64     { return e.counter(0) }
func (e *expectedState) synced() *atomic.Uint64   { return e.counter(1) }
func (e *expectedState) syncAcks() *atomic.Uint64 { return e.counter(2) }
func (e *expectedState) verified() *atomic.Uint64 { return e.counter(3) }
func (e *expectedState) cycles() *atomic.Uint64   { return e.counter(4) }

// raiseSynced records that every write acknowledged up to ack is durable.
func (e *expectedState) raiseSynced(ack uint64) {
	s := e.synced()
	for {
		cur := s.Load()
		if ack <= cur || s.CompareAndSwap(cur, ack) {
			return
		}
	}
}

func (e *expectedState) slot(i int) []byte {
	return e.data[expectedHeader+slotLen*i : expectedHeader+slotLen*(i+1)]
}

func (e *expectedState) selector(i int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&e.slot(i)[0]))
}

func (e *expectedState) get(i int) keyState {
	s := e.slot(i)
	c := s[8+stateLen*int(e.selector(i).Load()&1):]
	return keyState{
		durable: binary.LittleEndian.Uint32(c[0:]),
		latest:  binary.LittleEndian.Uint32(c[4:]),
		pending: binary.LittleEndian.Uint32(c[8:]),
		maxID:   binary.LittleEndian.Uint32(c[12:]),
		lastAck: binary.LittleEndian.Uint64(c[16:]),
		flags:   binary.LittleEndian.Uint32(c[24:]),
	}
}

// put replaces key i's state. The caller holds the key's lock.
func (e *expectedState) put(i int, st keyState) {
	sel := e.selector(i)
	next := (sel.Load() + 1) & 1
	c := e.slot(i)[8+stateLen*int(next):]
	binary.LittleEndian.PutUint32(c[0:], st.durable)
	binary.LittleEndian.PutUint32(c[4:], st.latest)
	binary.LittleEndian.PutUint32(c[8:], st.pending)
	binary.LittleEndian.PutUint32(c[12:], st.maxID)
	binary.LittleEndian.PutUint64(c[16:], st.lastAck)
	binary.LittleEndian.PutUint32(c[24:], st.flags)
	sel.Store(next)
}

// begin records that write id of key i (a deletion if del) is in flight.
func (st keyState) begin(id uint32, del bool) keyState {
	st.pending = id
	st.maxID = max(st.maxID, id)
	st.flags |= flagPendingValid
	st.flags &^= flagPendingDel
	if del {
		st.flags |= flagPendingDel
	}
	return st
}

// acked records that the pending write was acknowledged, with Sync or
// with ack number ack (synced: the header's synced count).
func (st keyState) acked(sync bool, ack, synced uint64) keyState {
	id, del := st.pending, st.flags&flagPendingDel != 0
	st.flags &^= flagPendingValid | flagPendingDel
	if sync {
		st.durable, st.latest, st.lastAck = id, id, 0
		st.flags &^= flagLossy | flagDelInRange | flagDurableDel | flagLatestDel
		if del {
			st.flags |= flagDurableDel | flagLatestDel
		}
		return st
	}
	if st.flags&flagLossy == 0 || st.lastAck <= synced {
		// What came before is durable: the lossy range starts here.
		st.durable = st.latest
		st.flags &^= flagLossy | flagDelInRange | flagDurableDel
		if st.flags&flagLatestDel != 0 {
			st.flags |= flagDurableDel
		}
	}
	st.latest, st.lastAck = id, ack
	st.flags |= flagLossy
	st.flags &^= flagLatestDel
	if del {
		st.flags |= flagLatestDel | flagDelInRange
	}
	return st
}

// refused records that the pending write was refused: it did not happen.
// (Its id stays taken: ids only grow.)
func (st keyState) refused() keyState {
	st.flags &^= flagPendingValid | flagPendingDel
	return st
}

// accepts reports whether a read after a crash may find the key absent
// (found false) or holding write id.
func (st keyState) accepts(found bool, id uint32, synced uint64) bool {
	if st.flags&flagPendingValid != 0 {
		if st.flags&flagPendingDel != 0 && !found {
			return true
		}
		if st.flags&flagPendingDel == 0 && found && id == st.pending {
			return true
		}
	}
	if st.flags&flagLossy == 0 || st.lastAck <= synced {
		if st.flags&flagLatestDel != 0 {
			return !found
		}
		return found && id == st.latest
	}
	if !found {
		return st.flags&(flagDurableDel|flagDelInRange|flagLatestDel) != 0
	}
	if id == st.durable && st.flags&flagDurableDel == 0 {
		return true
	}
	return id > st.durable && id <= st.latest
}

// expectLive says what a read of a live process must find: the latest
// acknowledged write.
func (st keyState) expectLive() (found bool, id uint32) {
	return st.flags&flagLatestDel == 0, st.latest
}

func (st keyState) String() string {
	return fmt.Sprintf("durable %d latest %d pending %d (max %d) lastAck %d flags %#x", st.durable, st.latest, st.pending, st.maxID, st.lastAck, st.flags)
}

// stressKey is key i of a stress run.
func stressKey(i int) []byte { return fmt.Appendf(nil, "k%07d", i) }

// parseStressKey returns the index of a stress key.
func parseStressKey(k []byte) (int, bool) {
	if len(k) != 8 || k[0] != 'k' {
		return 0, false
	}
	n, err := strconv.Atoi(string(k[1:]))
	return n, err == nil && n >= 0
}

// stressValue is the value of write id of key i: a header naming both,
// then filler derived from them, of a length also derived from them (half
// the values below 64 bytes, half from 100 bytes to 4 KiB, so both sides
// of a value threshold are written).
func stressValue(i int, id uint32) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", i, id)
	x := h.Sum64()
	n := 20 + int(x%44)
	if x&(1<<40) != 0 {
		n = 100 + int(x%4000)
	}
	v := fmt.Appendf(make([]byte, 0, n+20), "%07d:%09d:", i, id)
	for len(v) < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v = append(v, 'a'+byte(x%26))
	}
	return v
}

// parseStressValue returns the write id a value of key i names, or false
// if it is not a value any write of key i made.
func parseStressValue(i int, v []byte) (uint32, bool) {
	if len(v) < 18 || v[7] != ':' || v[17] != ':' {
		return 0, false
	}
	k, err1 := strconv.Atoi(string(v[:7]))
	id, err2 := strconv.ParseUint(string(v[8:17]), 10, 32)
	if err1 != nil || err2 != nil || k != i || id == 0 {
		return 0, false
	}
	if string(stressValue(i, uint32(id))) != string(v) {
		return 0, false
	}
	return uint32(id), true
}

// verifyResult is what a verification of a database against an expected
// state found.
type verifyResult struct {
	keys     int // keys present
	checked  int // keys checked (all of the key space)
	failures []string
	// found are the ids found per key (0: absent), for reconcile.
	found []uint32
}

func (r *verifyResult) failf(format string, args ...any) {
	if len(r.failures) < 20 {
		r.failures = append(r.failures, fmt.Sprintf(format, args...))
	} else if len(r.failures) == 20 {
		r.failures = append(r.failures, "more failures not shown")
	}
}

// verifyDB checks every key of db against e after a crash: a full scan
// and a Get of every key, which must agree, and each must be a state the
// key may be in.
func verifyDB(db *strata.DB, e *expectedState) *verifyResult {
	res := &verifyResult{found: make([]uint32, e.keys)}
	synced := e.synced().Load()
	seen := make([]bool, e.keys)
	it, err := db.NewIter(nil)
	if err != nil {
		res.failf("iterator: %v", err)
		return res
	}
	for ok := it.First(); ok; ok = it.Next() {
		i, ok := parseStressKey(it.Key())
		if !ok || i >= e.keys {
			res.failf("scan: key %q was never written", it.Key())
			continue
		}
		v := it.Value()
		if v == nil && it.Error() != nil {
			break // a value that could not be read: Close reports it
		}
		id, ok := parseStressValue(i, v)
		if !ok {
			res.failf("scan: key %s holds a value never written: %q", it.Key(), printable(v, false, 40))
			continue
		}
		seen[i], res.found[i] = true, id
		res.keys++
	}
	if err := it.Close(); err != nil {
		res.failf("scan: %v", err)
	}
	for i := 0; i < e.keys; i++ {
		st := e.get(i)
		v, err := db.Get(stressKey(i))
		switch {
		case errors.Is(err, strata.ErrNotFound):
			if seen[i] {
				res.failf("key %s: the scan found id %d, Get finds nothing", stressKey(i), res.found[i])
			}
		case err != nil:
			res.failf("key %s: Get: %v", stressKey(i), err)
			continue
		default:
			id, ok := parseStressValue(i, v)
			if !ok || !seen[i] || id != res.found[i] {
				res.failf("key %s: Get returns %q, the scan found id %d (present %t)", stressKey(i), printable(v, false, 40), res.found[i], seen[i])
			}
		}
		if !st.accepts(seen[i], res.found[i], synced) {
			res.failf("key %s: found %s, expected state: %s (synced through ack %d)", stressKey(i), describeFound(seen[i], res.found[i]), st, synced)
		}
		res.checked++
	}
	return res
}

func describeFound(found bool, id uint32) string {
	if !found {
		return "nothing"
	}
	return fmt.Sprintf("write %d", id)
}

// reconcile makes the expected state what the recovered database holds,
// after a verification that passed: every key's state becomes durable.
func (e *expectedState) reconcile(res *verifyResult) {
	for i := 0; i < e.keys; i++ {
		st := e.get(i)
		id := res.found[i]
		n := keyState{durable: id, latest: id, maxID: max(st.maxID, st.pending, st.latest, id)}
		if id == 0 {
			n.flags = flagDurableDel | flagLatestDel
		}
		e.put(i, n)
	}
}
