package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// oneBlockLog returns a log of several records that all fit in its first
// (and only, short) block: the shape of a WAL that a crash stops early. In
// the synced format it is written as the manifest is, with a sync after
// every record, so that each record's chunk claims the one before it was
// synced; in the legacy format the records carry no synced offset.
func oneBlockLog(t *testing.T, legacy bool) writtenLog {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 8))
	recs := make([][]byte, 8)
	for i := range recs {
		recs[i] = randBytes(rng, 40+rng.IntN(200))
	}
	var l writtenLog
	if legacy {
		l = writeLegacyLog(recs)
	} else {
		l = writeLogSyncing(t, recs, func(int) bool { return true }, false)
	}
	if len(l.data) >= BlockSize {
		t.Fatalf("log is %d bytes, want it inside one block", len(l.data))
	}
	return l
}

// formats runs f for a log in the synced format and for one in the legacy
// format.
func formats(t *testing.T, f func(t *testing.T, legacy bool)) {
	t.Run("synced", func(t *testing.T) { f(t, false) })
	t.Run("legacy", func(t *testing.T) { f(t, true) })
}

// checkReadPrefix reads data and checks that it holds the first n records
// of l, ending at l.ends[n-1], and then err: io.EOF if why is empty, or
// corruption of test.log at corruptAt whose message says why.
func checkReadPrefix(t *testing.T, l writtenLog, data []byte, n int, corruptAt int64, why string) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), "test.log")
	for i := range n {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(rec, l.recs[i]) {
			t.Fatalf("record %d is not the one written", i)
		}
	}
	_, err := r.Next()
	wantOff := int64(0)
	if n > 0 {
		wantOff = l.ends[n-1]
	}
	if r.Offset() != wantOff {
		t.Fatalf("Offset() = %d, want %d", r.Offset(), wantOff)
	}
	if why == "" {
		if err != io.EOF {
			t.Fatalf("after %d records: %v, want io.EOF", n, err)
		}
		return
	}
	var ce *base.CorruptionError
	if !errors.Is(err, base.ErrCorruption) || !errors.As(err, &ce) {
		t.Fatalf("after %d records: %v, want corruption", n, err)
	}
	if ce.File != "test.log" || ce.Offset != corruptAt {
		t.Fatalf("corruption names %s at %d, want test.log at %d (%v)", ce.File, ce.Offset, corruptAt, err)
	}
	if !strings.Contains(err.Error(), why) {
		t.Fatalf("error %q does not say %q", err, why)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v then %v", err, err2)
	}
}

// followsWhy is what a corruption error says about the valid chunk after
// the bad one, record next's first chunk.
func followsWhy(l writtenLog, next int, legacy bool) string {
	if legacy {
		return fmt.Sprintf("a valid chunk follows at offset %d", l.starts[next])
	}
	return fmt.Sprintf("the chunk at offset %d says the file was synced to offset %d", l.starts[next], l.synced[next])
}

// damage returns a copy of data with f applied to the chunk header and
// payload of the chunk at off.
func damage(data []byte, off int64, f func(header, payload []byte)) []byte {
	d := bytes.Clone(data)
	hs := int64(chunkHeaderSize(d[off+6]))
	length := int64(binary.LittleEndian.Uint16(d[off+4:]))
	f(d[off:off+hs], d[off+hs:off+hs+length])
	return d
}

// firstType returns the FIRST chunk type of a format.
func firstType(legacy bool) byte {
	if legacy {
		return legacyFirstChunk
	}
	return firstChunk
}

// TestDamageBeforeValidChunkInBlock damages an early record of a log that
// lies wholly in one block. The valid chunks after it show that the damage
// is not a torn append (the next record says the damaged one was synced;
// in a legacy log, a valid chunk after it is enough), so the reader must
// report corruption at the damaged chunk rather than drop the records after
// it as a torn tail.
func TestDamageBeforeValidChunkInBlock(t *testing.T) {
	formats(t, func(t *testing.T, legacy bool) {
		l := oneBlockLog(t, legacy)
		const victim = 1
		off := l.starts[victim]
		for _, tc := range []struct {
			name string
			f    func(header, payload []byte)
		}{
			{"payload byte", func(_, p []byte) { p[len(p)/2] ^= 0x10 }},
			{"first payload byte", func(_, p []byte) { p[0] ^= 0x01 }},
			{"last payload byte", func(_, p []byte) { p[len(p)-1] ^= 0x80 }},
			{"checksum", func(h, _ []byte) { h[2] ^= 0x04 }},
			{"length grown", func(h, _ []byte) { h[4]++ }},
			{"length shrunk", func(h, _ []byte) { h[4]-- }},
			{"length overruns the block", func(h, _ []byte) { h[4], h[5] = 0xff, 0xff }},
			{"length overruns the file", func(h, _ []byte) { h[5] = byte(BlockSize/2>>8) + h[5] }},
			{"type 0", func(h, _ []byte) { h[6] = invalidChunk }},
			{"type 9", func(h, _ []byte) { h[6] = lastChunk + 1 }},
			{"type 0xff", func(h, _ []byte) { h[6] = 0xff }},
			{"type FIRST", func(h, _ []byte) { h[6] = firstType(legacy) }},
			{"type of the other format", func(h, _ []byte) { h[6] ^= fullChunk ^ legacyFullChunk }},
			{"header zeroed", func(h, _ []byte) { clear(h) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				data := damage(l.data, off, tc.f)
				checkReadPrefix(t, l, data, victim, off, followsWhy(l, victim+1, legacy))
				if got := checkAgainstModel(t, data); got.corrupt != off {
					t.Fatalf("model: corrupt at %d, want %d", got.corrupt, off)
				}
			})
		}
	})
}

// TestDamagedLastChunkIsTornTail damages the log's last chunk. Nothing valid
// follows it, so this is indistinguishable from a torn append: the reader
// returns the records before it and io.EOF.
func TestDamagedLastChunkIsTornTail(t *testing.T) {
	formats(t, func(t *testing.T, legacy bool) {
		l := oneBlockLog(t, legacy)
		last := len(l.recs) - 1
		off := l.starts[last]
		for _, tc := range []struct {
			name string
			f    func(header, payload []byte)
		}{
			{"payload byte", func(_, p []byte) { p[len(p)/2] ^= 0x10 }},
			{"checksum", func(h, _ []byte) { h[0] ^= 0x01 }},
			{"length grown", func(h, _ []byte) { h[5]++ }},
			{"length shrunk", func(h, _ []byte) { h[4]-- }},
			{"type 0", func(h, _ []byte) { h[6] = invalidChunk }},
			{"type 9", func(h, _ []byte) { h[6] = lastChunk + 1 }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				data := damage(l.data, off, tc.f)
				checkReadPrefix(t, l, data, last, -1, "")
				checkAgainstModel(t, data)
			})
		}
	})
}

// TestTornTailInOneBlock checks the torn tails a crash leaves at the end of
// a one-block log, with nothing valid after the damage: each must give the
// valid prefix and then io.EOF.
func TestTornTailInOneBlock(t *testing.T) {
	formats(t, func(t *testing.T, legacy bool) {
		l := oneBlockLog(t, legacy)
		n := len(l.recs)
		rng := rand.New(rand.NewPCG(7, 7))
		garbage := randBytes(rng, 3000)
		if got := modelRead(cat(l.data, garbage)); got.corrupt >= 0 || len(got.recs) != n {
			t.Fatal("the garbage holds a valid chunk; pick another seed")
		}
		t.Run("cut inside the last record", func(t *testing.T) {
			for cut := l.starts[n-1] + 1; cut < l.ends[n-1]; cut++ {
				checkReadPrefix(t, l, l.data[:cut], n-1, -1, "")
			}
		})
		t.Run("cut inside the last record, zero-filled", func(t *testing.T) {
			for cut := l.starts[n-1] + 1; cut < l.ends[n-1]; cut++ {
				if allZero(l.data[cut:l.ends[n-1]]) {
					continue // the zeros change nothing
				}
				data := cat(l.data[:cut], make([]byte, 2*BlockSize-int(cut)))
				checkReadPrefix(t, l, data, n-1, -1, "")
			}
		})
		t.Run("cut inside the last record, garbage after", func(t *testing.T) {
			cut := (l.starts[n-1] + l.ends[n-1]) / 2
			data := cat(l.data[:cut], garbage)
			checkReadPrefix(t, l, data, n-1, -1, "")
			checkAgainstModel(t, data)
		})
		t.Run("zeros after the last record", func(t *testing.T) {
			checkReadPrefix(t, l, cat(l.data, make([]byte, 100)), n, -1, "")
			checkReadPrefix(t, l, cat(l.data, make([]byte, 3*BlockSize)), n, -1, "")
		})
		t.Run("garbage after the last record", func(t *testing.T) {
			checkReadPrefix(t, l, cat(l.data, garbage), n, -1, "")
			checkReadPrefix(t, l, cat(l.data, bytes.Repeat([]byte{0xff}, 500)), n, -1, "")
		})
	})
}
