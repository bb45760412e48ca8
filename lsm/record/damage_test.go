package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// These tests damage logs written by the Writer as a crash on a real disk
// can: pages of the unsynced tail that read back as zeros while the file
// keeps its size (XFS), later pages that reached the disk without earlier
// ones, a size cut anywhere past the last sync. Damage below a synced
// offset that a later chunk records is not a crash but corruption.

// pageSize is the unit in which a disk persists (or loses) a file's data.
const pageSize = 4 << 10

// zeroPage returns a copy of data with the page-aligned page that holds
// byte p zeroed (cut at the end of data).
func zeroPage(data []byte, p int64) []byte {
	d := bytes.Clone(data)
	clearPage(d, p)
	return d
}

// clearPage zeroes the page-aligned page of d that holds byte p.
func clearPage(d []byte, p int64) {
	start := p / pageSize * pageSize
	clear(d[start:min(start+pageSize, int64(len(d)))])
}

// intactPrefix returns how many of l's records, from the first, data holds
// unchanged: exactly the records a reader of data must return.
func intactPrefix(l writtenLog, data []byte) int {
	n := 0
	for n < len(l.recs) && l.ends[n] <= int64(len(data)) &&
		bytes.Equal(data[l.starts[n]:l.ends[n]], l.data[l.starts[n]:l.ends[n]]) {
		n++
	}
	return n
}

// chunkHolding returns the chunk of l that holds byte p, or false if p is
// in block padding.
func chunkHolding(spans []chunkSpan, p int64) (chunkSpan, bool) {
	for _, c := range spans {
		if c.start <= p && p < c.end {
			return c, true
		}
	}
	return chunkSpan{}, false
}

// firstChangedChunk returns the first chunk whose bytes differ between
// data and damaged.
func firstChangedChunk(spans []chunkSpan, data, damaged []byte) chunkSpan {
	for _, c := range spans {
		if c.end > int64(len(damaged)) || !bytes.Equal(data[c.start:c.end], damaged[c.start:c.end]) {
			return c
		}
	}
	return chunkSpan{start: -1}
}

// readExpect reads data with r (a Reader or strict Reader over it) and
// checks that it returns l's first n records, then io.EOF if corruptAt < 0
// or else corruption of test.log at corruptAt.
func readExpect(t *testing.T, r *Reader, l writtenLog, n int, corruptAt int64) error {
	t.Helper()
	got := 0
	for {
		rec, err := r.Next()
		if err != nil {
			if got != n {
				t.Fatalf("read %d records, want %d (err %v)", got, n, err)
			}
			if corruptAt < 0 {
				if err != io.EOF {
					t.Fatalf("after %d records: %v, want io.EOF", got, err)
				}
				return err
			}
			var ce *base.CorruptionError
			if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) || ce.Offset != corruptAt {
				t.Fatalf("after %d records: %v, want corruption at offset %d", got, err, corruptAt)
			}
			return err
		}
		if got >= len(l.recs) || !bytes.Equal(rec, l.recs[got]) {
			t.Fatalf("record %d is not the one written", got)
		}
		got++
	}
}

// walLog writes 300 records of 50 to 450 random bytes, about 75 KiB over
// three blocks, syncing after record syncAfter only.
func walLog(t *testing.T, syncAfter int) writtenLog {
	rng := rand.New(rand.NewPCG(21, 21))
	recs := make([][]byte, 300)
	for i := range recs {
		recs[i] = randBytes(rng, 50+rng.IntN(400))
	}
	return writeLogSyncing(t, recs, func(i int) bool { return i == syncAfter }, false)
}

// TestZeroPageInUnsyncedTail: a page of the unsynced tail reads back as
// zeros, and later pages, holding valid chunks, reached the disk. Nothing
// after the page says it was synced, so the log ends there: io.EOF after
// every record before the page.
func TestZeroPageInUnsyncedTail(t *testing.T) {
	l := walLog(t, 40)
	synced := l.syncs[0]
	for p := (synced + pageSize) / pageSize * pageSize; p+2*pageSize <= int64(len(l.data)); p += pageSize {
		t.Run(fmt.Sprintf("page at %d", p), func(t *testing.T) {
			data := zeroPage(l.data, p)
			n := intactPrefix(l, data)
			if l.ends[n-1] > p || l.ends[n] <= p {
				t.Fatalf("records up to %d are intact; the page at %d should end them", n, p)
			}
			readExpect(t, NewReader(bytes.NewReader(data), "test.log"), l, n, -1)
			checkAgainstModel(t, data)
		})
	}
}

// TestZeroPageBelowSyncedOffset: the same zero pages, in a log that a later
// chunk says was synced past them: that is corruption, named at the chunk
// the page damaged, and the error says which chunk showed it was synced.
func TestZeroPageBelowSyncedOffset(t *testing.T) {
	l := walLog(t, 250)
	synced := l.syncs[0]
	spans := chunkMap(l)
	for p := int64(pageSize); p+pageSize <= synced; p += pageSize {
		t.Run(fmt.Sprintf("page at %d", p), func(t *testing.T) {
			data := zeroPage(l.data, p)
			n := intactPrefix(l, data)
			err := readExpect(t, NewReader(bytes.NewReader(data), "test.log"), l, n, firstChangedChunk(spans, l.data, data).start)
			if want := fmt.Sprintf("says the file was synced to offset %d", synced); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
			checkAgainstModel(t, data)
		})
	}
}

// manifestLog writes records the way the manifest does, syncing after
// every record. The last record is large enough to hold whole pages in
// both of its blocks.
func manifestLog(t *testing.T) writtenLog {
	rng := rand.New(rand.NewPCG(22, 22))
	recs := make([][]byte, 12)
	for i := range recs {
		recs[i] = randBytes(rng, 200+rng.IntN(2000))
	}
	recs = append(recs, randBytes(rng, 2*BlockSize))
	return writeLogSyncing(t, recs, func(int) bool { return true }, false)
}

// TestStrictManifestDamage reads a manifest-like log with the strict
// reader. Its last record is complete in length but a page of it reads back
// as zeros: the record was never synced (its sync is what the crash
// interrupted), so the log ends before it. A flipped bit in an earlier
// record is corruption: the record after it says it was synced.
func TestStrictManifestDamage(t *testing.T) {
	l := manifestLog(t)
	last := len(l.recs) - 1
	t.Run("zero page in the last record", func(t *testing.T) {
		pages := 0
		for p := (l.starts[last] + pageSize - 1) / pageSize * pageSize; p+pageSize <= l.ends[last]; p += pageSize {
			data := zeroPage(l.data, p)
			if len(data) != len(l.data) || intactPrefix(l, data) != last {
				t.Fatalf("page at %d: the damage is not in the last record only", p)
			}
			readExpect(t, NewStrictReader(bytes.NewReader(data), "test.log"), l, last, -1)
			pages++
		}
		if pages < 10 {
			t.Fatalf("only %d pages in the last record", pages)
		}
	})
	t.Run("bit flip in a synced record", func(t *testing.T) {
		spans := chunkMap(l)
		rng := rand.New(rand.NewPCG(23, 23))
		for range 200 {
			p := rng.Int64N(l.starts[last])
			data := bytes.Clone(l.data)
			data[p] ^= 1 << rng.IntN(8)
			c, ok := chunkHolding(spans, p)
			if !ok {
				readExpect(t, NewStrictReader(bytes.NewReader(data), "test.log"), l, len(l.recs), -1)
				continue
			}
			readExpect(t, NewStrictReader(bytes.NewReader(data), "test.log"), l, c.rec, c.start)
		}
	})
}

// TestRandomCrashDamage writes logs with syncs at random points and damages
// them as a crash can, past the last sync: zeroed pages, a size cut
// anywhere, and a cut file whose size reached the disk with zeros. The
// reader must return exactly the records the damage left whole (so at
// least every record below the last sync), then io.EOF, never an error.
// Then it flips single bytes below the last synced offset a chunk records:
// each is corruption at the damaged chunk, or nothing if it hit padding.
func TestRandomCrashDamage(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 60
	}
	if raceEnabled {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 24))
		recs := randRecords(rng, 40+rng.IntN(80), 2*BlockSize)
		l := writeLogSyncing(t, recs, func(int) bool { return rng.IntN(5) == 0 }, false)
		lastSync := int64(0)
		if len(l.syncs) > 0 {
			lastSync = l.syncs[len(l.syncs)-1]
		}
		pr := newPrefixReader(l.recs)
		buf := make([]byte, len(l.data))
		for try := range 20 {
			data := crashDamage(rng, buf, l.data, lastSync)
			n, err, _ := pr.read(t, data)
			if err != io.EOF || n != intactPrefix(l, data) {
				t.Fatalf("seed %d, try %d: %d records, %v; want %d records, io.EOF",
					seed, try, n, err, intactPrefix(l, data))
			}
			if n < len(l.ends) && l.ends[n] <= lastSync {
				t.Fatalf("seed %d, try %d: lost record %d, below the last sync", seed, try, n)
			}
		}
		claimed := l.lastSynced()
		if claimed == 0 {
			continue
		}
		spans := chunkMap(l)
		data := bytes.Clone(l.data)
		for range 20 {
			p := rng.Int64N(claimed)
			old := data[p]
			data[p] ^= byte(1 + rng.IntN(255))
			n, err, _ := pr.read(t, data)
			data[p] = old
			c, inChunk := chunkHolding(spans, p)
			var ce *base.CorruptionError
			switch {
			case !inChunk:
				if err != io.EOF || n != len(l.recs) {
					t.Fatalf("seed %d: flip at %d, in padding: %d records, %v", seed, p, n, err)
				}
			case !errors.As(err, &ce) || ce.Offset != c.start || n != c.rec:
				t.Fatalf("seed %d: flip at %d (below synced offset %d): %d records, %v; want corruption at %d after %d",
					seed, p, claimed, n, err, c.start, c.rec)
			}
		}
	}
}

// crashDamage copies data into buf (of the same length) and returns it
// damaged past offset synced as a crash can damage it: zeroed pages wholly
// past synced, then perhaps a cut anywhere past synced, perhaps zero-filled
// back to a page boundary or to the original size.
func crashDamage(rng *rand.Rand, buf, data []byte, synced int64) []byte {
	d := buf[:copy(buf, data)]
	size := int64(len(d))
	firstPage := (synced + pageSize - 1) / pageSize * pageSize
	if firstPage < size {
		for range rng.IntN(4) {
			clearPage(d, firstPage+rng.Int64N(size-firstPage))
		}
	}
	if rng.IntN(2) == 0 && synced < size {
		cut := synced + rng.Int64N(size-synced+1)
		switch rng.IntN(3) {
		case 0:
			d = d[:cut]
		case 1:
			clear(d[cut:])
		default:
			end := min((cut+pageSize-1)/pageSize*pageSize, size)
			clear(d[cut:end])
			d = d[:end]
		}
	}
	return d
}
