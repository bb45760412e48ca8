package learned

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Options configure a Builder. The zero value gives the defaults.
type Options struct {
	// ErrorBound is the largest distance, in positions, the model may put
	// between a key's predicted position and its true one. Default
	// DefaultErrorBound; at most MaxErrorBound.
	ErrorBound int
	// MinKeys is the smallest key set that gets a model. Default 64.
	MinKeys int
	// MinKeysPerSegment refuses a model that needs more than one segment
	// per this many keys on average. Default 32.
	MinKeysPerSegment int
	// MaxSpread refuses a model when keys that share the 8 bytes after the
	// prefix lie further apart than this, in positions. Default
	// 2 * ErrorBound.
	MaxSpread int
	// MaxShare is the largest memory a model may take as a share of the
	// size of what it indexes (a table's bytes). The Builder does not know
	// that size: the caller enforces it, recording ReasonTooLarge. Default
	// 0.01 (1%).
	MaxShare float64
}

// Defaults and limits of Options.
const (
	DefaultErrorBound = 8
	DefaultMaxShare   = 0.01
	MaxErrorBound     = 1 << 16
	// MaxPosition is the largest position a model can hold.
	MaxPosition = math.MaxUint32
)

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.ErrorBound < 0 || o.ErrorBound > MaxErrorBound {
		errs = append(errs, fmt.Errorf("learned: ErrorBound %d out of range [0, %d]", o.ErrorBound, MaxErrorBound))
	}
	if o.MinKeys < 0 {
		errs = append(errs, fmt.Errorf("learned: MinKeys %d is negative", o.MinKeys))
	}
	if o.MinKeysPerSegment < 0 {
		errs = append(errs, fmt.Errorf("learned: MinKeysPerSegment %d is negative", o.MinKeysPerSegment))
	}
	if o.MaxSpread < 0 {
		errs = append(errs, fmt.Errorf("learned: MaxSpread %d is negative", o.MaxSpread))
	}
	if !(o.MaxShare >= 0) {
		errs = append(errs, fmt.Errorf("learned: MaxShare %v is negative", o.MaxShare))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.ErrorBound == 0 {
		o.ErrorBound = DefaultErrorBound
	}
	o.ErrorBound = min(o.ErrorBound, MaxErrorBound)
	if o.MinKeys == 0 {
		o.MinKeys = 64
	}
	if o.MinKeysPerSegment == 0 {
		o.MinKeysPerSegment = 32
	}
	if o.MaxSpread == 0 {
		o.MaxSpread = 2 * o.ErrorBound
	}
	if !(o.MaxShare > 0) {
		o.MaxShare = DefaultMaxShare
	}
	return o
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options { return o.withDefaults() }

// Reason says why Finish made no model.
type Reason uint8

// The reasons, stored by callers that record a refusal: never renumber.
const (
	// ReasonNone: a model was made.
	ReasonNone Reason = iota
	// ReasonTooFewKeys: fewer keys than Options.MinKeys.
	ReasonTooFewKeys
	// ReasonTooManySegments: more than one segment per
	// Options.MinKeysPerSegment keys.
	ReasonTooManySegments
	// ReasonSharedBytes: keys sharing the 8 bytes after the prefix lie
	// more than Options.MaxSpread positions apart.
	ReasonSharedBytes
	// ReasonTooManyPositions: a position above MaxPosition.
	ReasonTooManyPositions
	// ReasonTooLarge: the model would take more memory than the caller
	// allows for the key set (recorded by callers, never returned by
	// Finish).
	ReasonTooLarge
	// ReasonDisabled: the caller did not build a model (recorded by
	// callers, never returned by Finish).
	ReasonDisabled

	numReasons
)

var reasonNames = [numReasons]string{"none", "too few keys", "too many segments", "keys share their first bytes", "too many positions", "too large", "disabled"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Builder fits a Model to keys added in increasing order. It buffers 12
// bytes per key until Finish. It is not safe for concurrent use.
type Builder struct {
	o     Options
	first []byte
	last  []byte
	n     int
	// words[i] is the 8 bytes of key i that follow its common prefix with
	// the first key, whose length is given by runs.
	words []uint64
	pos   []uint32
	// runs records where the common prefix with the first key shrinks:
	// keys from runs[j].start on share runs[j].lcp bytes with it (until
	// the next run). The length never grows in a sorted set.
	runs    []lcpRun
	refused Reason
}

type lcpRun struct{ start, lcp int }

// NewBuilder returns a Builder; invalid options are clamped to their
// defaults (Validate reports them).
func NewBuilder(o Options) *Builder {
	return &Builder{o: o.withDefaults()}
}

// ErrorBound returns the error bound the Builder fits to.
func (b *Builder) ErrorBound() int { return b.o.ErrorBound }

// Add adds the next key, at position pos. Keys must strictly increase
// (bytes.Compare) and positions must not decrease; the caller guarantees
// it (the table writer checks its own order). Add copies nothing but 12
// bytes of the key.
func (b *Builder) Add(key []byte, pos uint64) {
	if b.refused != ReasonNone {
		return
	}
	if pos > MaxPosition {
		b.refused = ReasonTooManyPositions
		b.words, b.pos, b.runs = nil, nil, nil
		return
	}
	lcp := len(key)
	if b.n == 0 {
		b.first = append(b.first[:0], key...)
		b.runs = append(b.runs, lcpRun{0, lcp})
	} else {
		lcp = commonPrefix(b.first, key)
		if lcp < b.runs[len(b.runs)-1].lcp {
			b.runs = append(b.runs, lcpRun{b.n, lcp})
		}
	}
	b.words = append(b.words, load8(key[lcp:]))
	b.pos = append(b.pos, uint32(pos))
	b.last = append(b.last[:0], key...)
	b.n++
}

// Len returns the number of keys added.
func (b *Builder) Len() int { return b.n }

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// load8 returns the first 8 bytes of k as a big-endian integer, padded
// with zeros.
func load8(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// Finish fits the model. It returns nil and the reason when the key set is
// refused (see the package documentation). The Builder must not be used
// afterwards.
func (b *Builder) Finish() (*Model, Reason) {
	if b.refused != ReasonNone {
		return nil, b.refused
	}
	if b.n < b.o.MinKeys || b.n == 0 {
		return nil, ReasonTooFewKeys
	}
	plen := b.runs[len(b.runs)-1].lcp
	xs := b.integers(plen)

	// Runs of keys sharing an integer train on their first key; their
	// spread widens every window.
	px, py := xs[:0], make([]uint32, 0, len(xs))
	var spread uint32
	var runStart uint32
	for i, x := range xs {
		if i > 0 && x == px[len(px)-1] {
			spread = max(spread, b.pos[i]-runStart)
			continue
		}
		px = append(px, x)
		py = append(py, b.pos[i])
		runStart = b.pos[i]
	}
	if int(spread) > b.o.MaxSpread {
		return nil, ReasonSharedBytes
	}
	m := &Model{
		prefix:  append([]byte(nil), b.first[:plen]...),
		maxX:    px[len(px)-1],
		spread:  spread,
		lastPos: b.pos[b.n-1],
	}
	if !fit(m, px, py, float64(b.o.ErrorBound), b.n/b.o.MinKeysPerSegment+1) {
		return nil, ReasonTooManySegments
	}
	m.init()
	// The bound is what the lookup arithmetic achieves on every key.
	var bound uint32
	for i, x := range px {
		p := m.predict(x)
		bound = max(bound, absDiff(p, py[i]))
	}
	m.bound = bound
	return m, ReasonNone
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// integers returns every key's integer for the prefix length plen, from the
// buffered words: key i shares first[:lcp_i] with the first key and its
// word holds its bytes [lcp_i, lcp_i+8), so its bytes [plen, plen+8) are
// first[plen:lcp_i] followed by the top of its word. It reuses b.words.
func (b *Builder) integers(plen int) []uint64 {
	xs := b.words
	for j, r := range b.runs {
		end := b.n
		if j+1 < len(b.runs) {
			end = b.runs[j+1].start
		}
		d := r.lcp - plen // bytes of the first key before the word
		if d == 0 {
			continue // the words are the integers
		}
		if d >= 8 {
			x := load8(b.first[plen:])
			for i := r.start; i < end; i++ {
				xs[i] = x
			}
			continue
		}
		head := load8(b.first[plen:r.lcp]) // first[plen:lcp] in the top d bytes
		for i := r.start; i < end; i++ {
			xs[i] = head | xs[i]>>(8*d)
		}
	}
	return xs
}

// fit runs the shrinking-cone algorithm over the points (xs[i], ys[i]), xs
// strictly increasing, filling m's segments. It gives up (false) once
// more than maxSegs segments are needed.
func fit(m *Model, xs []uint64, ys []uint32, eps float64, maxSegs int) bool {
	x0, y0 := xs[0], float64(ys[0])
	lo, hi := 0.0, math.Inf(1)
	emit := func() bool {
		slope := lo
		if !math.IsInf(hi, 1) {
			slope = lo + (hi-lo)/2
		}
		m.xs = append(m.xs, x0)
		m.ys = append(m.ys, uint32(y0))
		// Rounding to float32 moves the slope by a relative 2^-24, far
		// less than the cone's width on any segment of fewer than millions
		// of positions; Finish measures the bound after it in any case.
		m.slopes = append(m.slopes, float32(slope))
		return len(m.xs) <= maxSegs
	}
	for i := 1; i < len(xs); i++ {
		dx := float64(xs[i] - x0)
		dy := float64(ys[i]) - y0
		smin, smax := (dy-eps)/dx, (dy+eps)/dx
		nlo, nhi := max(lo, smin), min(hi, smax)
		if nlo > nhi {
			if !emit() {
				return false
			}
			x0, y0 = xs[i], float64(ys[i])
			lo, hi = 0, math.Inf(1)
			continue
		}
		lo, hi = nlo, nhi
	}
	return emit()
}
