package memtable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// TestArenaGrowsInChunks: a large memtable starts with one chunk, grows as
// entries arrive (entries larger than a chunk included, which get a buffer
// of their own), reads back every entry, and Reset gives back all but the
// first chunk.
func TestArenaGrowsInChunks(t *testing.T) {
	m := New(64 << 20)
	if got := m.Memory(); got != chunkSize {
		t.Fatalf("a new 64 MiB memtable holds %d bytes, want one chunk (%d)", got, chunkSize)
	}
	want := map[string][]byte{}
	for i := 0; i < 300; i++ {
		n := 100 + i*37
		switch i % 50 {
		case 7:
			n = chunkSize + 12345 // larger than a chunk
		case 8:
			n = 3*chunkSize - 200 // almost three
		case 9:
			n = 0
		}
		k := []byte(fmt.Sprintf("key%05d", i))
		v := bytes.Repeat([]byte{byte(i)}, n)
		avail := m.Available()
		if avail < EntrySize(len(k), len(v)) {
			t.Fatalf("entry %d: only %d available", i, avail)
		}
		if err := m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), v); err != nil {
			t.Fatalf("entry %d (%d bytes): %v", i, n, err)
		}
		if grew := avail - m.Available(); grew > EntrySize(len(k), len(v)) {
			t.Fatalf("entry %d used %d bytes, EntrySize %d", i, grew, EntrySize(len(k), len(v)))
		}
		want[string(k)] = v
		if mem := m.Memory(); mem < int64(m.Size()) || mem > int64(m.Size())+3*chunkSize+int64(n) {
			t.Fatalf("entry %d: memory %d for size %d", i, mem, m.Size())
		}
	}
	for k, v := range want {
		got, kind, _, ok := m.Get([]byte(k), base.SeqNumMax)
		if !ok || kind != base.KindSet || !bytes.Equal(got, v) {
			t.Fatalf("Get(%s): ok %v, %d bytes, want %d", k, ok, len(got), len(v))
		}
	}
	it := m.NewIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Value(), want[string(it.Key().UserKey)]) {
			t.Fatalf("iterator: %s has %d bytes", it.Key(), len(it.Value()))
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("iterator saw %d entries, want %d", n, len(want))
	}
	if m.Memory() < 8*chunkSize {
		t.Fatalf("memory %d after %d bytes of entries", m.Memory(), m.Size())
	}
	m.Reset()
	if m.Memory() != chunkSize || !m.Empty() {
		t.Fatalf("after Reset: memory %d, empty %v", m.Memory(), m.Empty())
	}
	if err := m.Add(base.MakeInternalKey([]byte("again"), 1, base.KindSet), bytes.Repeat([]byte("x"), 2*chunkSize)); err != nil {
		t.Fatal(err)
	}
	if v, _, _, ok := m.Get([]byte("again"), base.SeqNumMax); !ok || len(v) != 2*chunkSize {
		t.Fatalf("after Reset: Get: ok %v, %d bytes", ok, len(v))
	}
}

// TestArenaFillsToCapacity: a memtable of a few chunks accepts entries of
// mixed sizes until Add reports ErrArenaFull, and never while Available
// was at least EntrySize.
func TestArenaFillsToCapacity(t *testing.T) {
	for _, size := range []int{3*chunkSize + 1000, 4 * chunkSize, 100 << 10} {
		m := New(size)
		for i := 0; ; i++ {
			k := []byte(fmt.Sprintf("k%06d", i))
			v := make([]byte, (i*7919)%(chunkSize/3))
			avail := m.Available()
			err := m.Add(base.MakeInternalKey(k, base.SeqNum(i+1), base.KindSet), v)
			if err == ErrArenaFull {
				if avail >= EntrySize(len(k), len(v)) {
					t.Fatalf("size %d: arena full with %d available, EntrySize %d", size, avail, EntrySize(len(k), len(v)))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Memory() > int64(alignUp(uint64(m.Capacity()))) {
				t.Fatalf("size %d: memory %d over capacity %d", size, m.Memory(), m.Capacity())
			}
		}
	}
}
