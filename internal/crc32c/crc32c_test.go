package crc32c

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// withFold runs f with the fold path on and, when the processor has it,
// off, so that both paths are checked wherever the tests run.
func withFold(t *testing.T, f func(t *testing.T)) {
	was := useFold
	defer func() { useFold = was }()
	for _, on := range []bool{false, true} {
		if on && !was {
			t.Log("this processor has no fold path; only hash/crc32's was checked")
			continue
		}
		useFold = on
		name := "hash-crc32"
		if on {
			name = "fold"
		}
		t.Run(name, f)
	}
}

// TestUpdateMatchesHashCRC32: every length up to 3 KiB, at every
// alignment in a cache line, from random registers, gives hash/crc32's
// value, and so does a chain of Updates over pieces.
func TestUpdateMatchesHashCRC32(t *testing.T) {
	withFold(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		buf := make([]byte, 3*1024+64)
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		for n := 0; n <= 3*1024; n++ {
			off := n % 64
			p := buf[off : off+n]
			seed := rng.Uint32()
			require.Equal(t, crc32.Update(seed, table, p), Update(seed, p), "%d bytes at offset %d", n, off)
		}
		for i := 0; i < 200; i++ {
			p := buf[rng.IntN(64):]
			p = p[:rng.IntN(len(p))]
			want := crc32.Checksum(p, table)
			var got uint32
			for rest := p; len(rest) > 0; {
				k := min(len(rest), rng.IntN(1200))
				got = Update(got, rest[:k])
				rest = rest[k:]
			}
			require.Equal(t, want, got, "%d bytes in pieces", len(p))
			require.Equal(t, want, Checksum(p))
		}
	})
}

// TestCopyUpdate: CopyUpdate copies src and returns hash/crc32's
// checksum of it, for every length around the sizes it works in and at
// every alignment in a cache line, with memory ahead of every such length
// too (or none); it writes nothing past len(src) in dst. UpdateAhead
// returns the same checksum without copying.
func TestCopyUpdate(t *testing.T) {
	withFold(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		buf := make([]byte, 6*1024)
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		lens := []int{0, 1, 15, 63, 64, 65, 255, 256, 257, 319, 320, 511, 512, 1023, 1024, 1025, 4096, 4096 + 40, 5*1024 + 3}
		dst := make([]byte, len(buf)+64)
		for _, n := range lens {
			for _, m := range append(lens, -1) {
				off := rng.IntN(64)
				src := buf[off : off+n]
				var ahead []byte
				if m >= 0 {
					ahead = buf[len(buf)-m:]
				}
				for j := range dst {
					dst[j] = 0xee
				}
				seed := rng.Uint32()
				want := crc32.Update(seed, table, src)
				require.Equal(t, want, CopyUpdate(dst, src, seed, ahead), "%d bytes, %d ahead", n, m)
				require.Equal(t, src, dst[:n], "%d bytes, %d ahead: the copy", n, m)
				for j := n; j < len(dst); j++ {
					require.Equal(t, byte(0xee), dst[j], "%d bytes, %d ahead: byte %d past the copy", n, m, j)
				}
				require.Equal(t, want, UpdateAhead(seed, src, ahead), "%d bytes, %d ahead: UpdateAhead", n, m)
			}
		}
	})
}

// TestUpdateLarge: long inputs, all ones and all zeros (which a wrong
// multiplier can map to the right value for zeros alone), and random.
func TestUpdateLarge(t *testing.T) {
	withFold(t, func(t *testing.T) {
		for _, n := range []int{256, 320, 511, 512, 4096, 4160, 65536 + 17, 1 << 20} {
			for _, fill := range []byte{0, 0xff} {
				p := make([]byte, n)
				for i := range p {
					p[i] = fill
				}
				require.Equal(t, crc32.Checksum(p, table), Checksum(p), "%d bytes of %#x", n, fill)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i*131 + i>>9)
			}
			require.Equal(t, crc32.Checksum(p, table), Checksum(p), "%d bytes", n)
		}
	})
}

// TestFoldKeys: the pairs keys derives are the ones folding needs: a
// model of one fold in Go (carry-less multiplication by shifts) over each
// distance gives hash/crc32's value.
func TestFoldKeys(t *testing.T) {
	k := keys()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ d, i int }{{256, 0}, {64, 2}, {48, 4}, {32, 6}, {16, 8}} {
		// A 16-byte lane, then d-16 bytes, then a 16-byte block it is
		// folded onto; the rest of the message is zeros here.
		msg := make([]byte, c.d+16)
		for i := range msg[:16] {
			msg[i] = byte(rng.Uint32())
		}
		for i := c.d; i < len(msg); i++ {
			msg[i] = byte(rng.Uint32())
		}
		// fold moves the first lane by d bytes with the pair (klo, khi)
		// and adds it to the last block.
		fold := func(klo, khi uint64) []byte {
			le := binary.LittleEndian
			a0, a1 := clmul(le.Uint64(msg), klo)
			b0, b1 := clmul(le.Uint64(msg[8:]), khi)
			folded := make([]byte, 16)
			le.PutUint64(folded, a0^b0^le.Uint64(msg[c.d:]))
			le.PutUint64(folded[8:], a1^b1^le.Uint64(msg[c.d+8:]))
			return folded
		}
		// The folded 16 bytes stand for the whole message: the CRC
		// register (not inverted) from zero over each is the same.
		require.Equal(t, register(msg), register(fold(k[c.i], k[c.i+1])), "distance %d", c.d)
		// And a wrong pair would not do: the pair for the next distance.
		require.NotEqual(t, register(msg), register(fold(xnmodp(8*(c.d+1)+31), xnmodp(8*(c.d+1)-33))), "distance %d, the pair of %d", c.d, c.d+1)
	}
}

// register returns the CRC register, not inverted, after p from zero.
func register(p []byte) uint32 { return ^crc32.Update(^uint32(0), table, p) }

// clmul is carry-less multiplication, the 128-bit product of a and b.
func clmul(a, b uint64) (lo, hi uint64) {
	for i := range 64 {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return lo, hi
}

var sink uint32

func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{1024, 4096, 65536} {
		p := make([]byte, n)
		for _, on := range []bool{false, true} {
			if on && !useFold {
				continue
			}
			name := "hash-crc32"
			if on {
				name = "fold"
			}
			b.Run(fmt.Sprintf("%s/%dKiB", name, n>>10), func(b *testing.B) {
				was := useFold
				useFold = on
				defer func() { useFold = was }()
				b.SetBytes(int64(n))
				for range b.N {
					sink += Update(0, p)
				}
			})
		}
	}
}
