package learned

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Model predicts the position of a key of the set it was fitted to. It is
// read-only and safe for concurrent use.
type Model struct {
	prefix  []byte
	maxX    uint64
	bound   uint32
	spread  uint32
	lastPos uint32

	// Segment i starts at xs[i], where it predicts ys[i], and rises by
	// slopes[i] positions per unit of x.
	xs     []uint64
	ys     []uint32
	slopes []float32

	// radix[b] is the first segment whose bucket, (x0 - xs[0]) >> shift,
	// is at least b; it has one entry per bucket in use, plus one.
	radix []uint32
	shift uint
}

// radixBitsFor returns the number of radix bits for n segments: one or two
// buckets per segment, at most 2^20 buckets.
func radixBitsFor(n int) uint {
	return min(uint(bits.Len(uint(n))), 20)
}

// init builds the radix table over the segments.
func (m *Model) init() {
	rbits := radixBitsFor(len(m.xs))
	span := m.maxX - m.xs[0]
	m.shift = 0
	if l := uint(bits.Len64(span)); l > rbits {
		m.shift = l - rbits
	}
	nb := int(span>>m.shift) + 1 // buckets in use
	m.radix = make([]uint32, nb+1)
	seg := 0
	for b := 0; b <= nb; b++ {
		for seg < len(m.xs) && int((m.xs[seg]-m.xs[0])>>m.shift) < b {
			seg++
		}
		m.radix[b] = uint32(seg)
	}
}

// segment returns the last segment whose start is <= x, for xs[0] <= x <=
// maxX.
func (m *Model) segment(x uint64) int {
	b := (x - m.xs[0]) >> m.shift
	lo, hi := int(m.radix[b]), int(m.radix[b+1])
	// The answer is in [lo-1, hi-1]: segments of bucket b, or the last one
	// before them.
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.xs[mid] <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// predict returns the predicted position of integer x, in [xs[0], maxX].
func (m *Model) predict(x uint64) uint32 {
	i := m.segment(x)
	p := float64(m.ys[i]) + float64(m.slopes[i])*float64(x-m.xs[i]) + 0.5
	if p >= float64(m.lastPos) {
		return m.lastPos
	}
	return uint32(p)
}

// Predict returns the window [lo, hi] of positions in which key lies if it
// is in the set. ok is false when the key cannot be in the set: it lacks
// the prefix, or its integer lies outside those of the first and last
// keys.
func (m *Model) Predict(key []byte) (lo, hi int, ok bool) {
	n := len(m.prefix)
	if len(key) < n || !bytes.Equal(key[:n], m.prefix) {
		return 0, 0, false
	}
	x := load8(key[n:])
	if x < m.xs[0] || x > m.maxX {
		return 0, 0, false
	}
	p := int(m.predict(x))
	return max(p-int(m.bound), 0), min(p+int(m.bound+m.spread), int(m.lastPos)), true
}

// Bound returns the largest error of the model's predictions over its key
// set, in positions.
func (m *Model) Bound() int { return int(m.bound) }

// Spread returns the extra width of every window for keys that share an
// integer (0 when no two do).
func (m *Model) Spread() int { return int(m.spread) }

// Prefix returns the prefix every key of the set shares (read-only).
func (m *Model) Prefix() []byte { return m.prefix }

// LastPosition returns the position of the set's last key.
func (m *Model) LastPosition() int { return int(m.lastPos) }

// Segments returns the number of linear segments.
func (m *Model) Segments() int { return len(m.xs) }

// Size returns the memory the model holds, in bytes.
func (m *Model) Size() int {
	return len(m.prefix) + 16*len(m.xs) + 4*len(m.radix) + 64
}

// Encode appends the model's encoding (see the package documentation) to
// dst.
func (m *Model) Encode(dst []byte) []byte {
	dst = append(dst, encodingVersion)
	dst = binary.AppendUvarint(dst, uint64(m.bound))
	dst = binary.AppendUvarint(dst, uint64(m.spread))
	dst = binary.AppendUvarint(dst, uint64(m.lastPos))
	dst = binary.AppendUvarint(dst, uint64(len(m.prefix)))
	dst = append(dst, m.prefix...)
	dst = binary.LittleEndian.AppendUint64(dst, m.maxX)
	dst = binary.AppendUvarint(dst, uint64(len(m.xs)))
	for _, x := range m.xs {
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	for _, y := range m.ys {
		dst = binary.LittleEndian.AppendUint32(dst, y)
	}
	for _, s := range m.slopes {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(s))
	}
	return dst
}

const encodingVersion = 1

// maxSegments bounds the segment count Decode accepts, so that a corrupt
// count cannot request a huge allocation before the length check.
const maxSegments = 1 << 28

var errShort = errors.New("learned: model encoding ends early or has a bad uvarint")

// uvarint decodes a shortest-form uvarint (so that every model has one
// encoding); n <= 0 when b does not start with one.
func uvarint(b []byte) (v uint64, n int) {
	v, n = binary.Uvarint(b)
	if n > 1 && b[n-1] == 0 {
		return 0, -n
	}
	return v, n
}

// Decode parses a model encoded by Encode. It checks everything a lookup
// relies on; an error describes the first problem found.
func Decode(b []byte) (*Model, error) {
	if len(b) == 0 {
		return nil, errShort
	}
	if b[0] != encodingVersion {
		return nil, fmt.Errorf("learned: unknown model encoding version %d", b[0])
	}
	b = b[1:]
	var f [4]uint64
	for i := range f {
		v, n := uvarint(b)
		if n <= 0 {
			return nil, errShort
		}
		f[i], b = v, b[n:]
	}
	bound, spread, lastPos, plen := f[0], f[1], f[2], f[3]
	if bound > MaxErrorBound || spread > MaxPosition || lastPos > MaxPosition {
		return nil, fmt.Errorf("learned: bound %d, spread %d or last position %d out of range", bound, spread, lastPos)
	}
	if plen > uint64(len(b)) {
		return nil, errShort
	}
	m := &Model{bound: uint32(bound), spread: uint32(spread), lastPos: uint32(lastPos)}
	m.prefix = append([]byte{}, b[:plen]...)
	b = b[plen:]
	if len(b) < 8 {
		return nil, errShort
	}
	m.maxX = binary.LittleEndian.Uint64(b)
	b = b[8:]
	n, k := uvarint(b)
	if k <= 0 {
		return nil, errShort
	}
	b = b[k:]
	if n == 0 || n > maxSegments {
		return nil, fmt.Errorf("learned: %d segments", n)
	}
	if uint64(len(b)) != n*16 {
		return nil, fmt.Errorf("learned: %d bytes for %d segments, want %d", len(b), n, n*16)
	}
	m.xs = make([]uint64, n)
	m.ys = make([]uint32, n)
	m.slopes = make([]float32, n)
	for i := range m.xs {
		m.xs[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	b = b[8*n:]
	for i := range m.ys {
		m.ys[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	b = b[4*n:]
	for i := range m.slopes {
		m.slopes[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	for i := range m.xs {
		if i > 0 && (m.xs[i] <= m.xs[i-1] || m.ys[i] < m.ys[i-1]) {
			return nil, fmt.Errorf("learned: segment %d does not follow segment %d", i, i-1)
		}
		if s := float64(m.slopes[i]); !(s >= 0) || math.IsInf(s, 1) {
			return nil, fmt.Errorf("learned: segment %d has slope %v", i, s)
		}
		if m.ys[i] > m.lastPos {
			return nil, fmt.Errorf("learned: segment %d starts at position %d, past the last %d", i, m.ys[i], m.lastPos)
		}
	}
	if m.xs[n-1] > m.maxX {
		return nil, fmt.Errorf("learned: last segment starts past the largest key")
	}
	m.init()
	return m, nil
}
