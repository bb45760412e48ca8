package sstable

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/internal/stripe"
)

// MetaLearnedName is the meta block holding the table's learned index, or
// the reason it has none.
const MetaLearnedName = "strata.index.learned"

// The learned-index block records what the writer decided. Integers are
// uvarints unless marked.
//
//	+-------------+-------------+
//	| version (1B)| reason (1B) |  version 1; reason: learned.Reason, 0 = a model follows
//	+-------------+-------------+
//
// With a model (reason 0), then:
//
//	+------------------+---------+--------+---------------------+-----------------------+
//	| restart interval | entries | blocks | entries of block i  | model (package learned|
//	|                  |         |  (n)   | (n uvarints)        | encoding, to the end) |
//	+------------------+---------+--------+---------------------+-----------------------+
//
// The model maps a user key to the position of its first (newest) entry,
// counting every point entry of the table from 0. The block counts map a
// position to its data block; within a block, the restart interval maps it
// to a restart point (every block starts with one, then every interval
// entries). A table without this block (written before it existed, or with
// the learned index turned off) is read through the index block alone, as
// is one whose block records a reason.
const learnedBlockVersion = 1

// learnedWriter is the writer-side hook: it sees every point key and the
// end of every data block.
type learnedWriter struct {
	b         *learned.Builder
	maxShare  float64
	counts    []uint64 // entries of each finished data block
	lastEnd   uint64   // entries in the finished blocks
	restartIv int
}

func newLearnedWriter(o learned.Options, restartInterval int) *learnedWriter {
	return &learnedWriter{b: learned.NewBuilder(o), maxShare: o.WithDefaults().MaxShare, restartIv: restartInterval}
}

// addKey is called with each new user key and the position of its first
// entry.
func (lw *learnedWriter) addKey(userKey []byte, pos uint64) { lw.b.Add(userKey, pos) }

// blockDone is called when a data block is written; entries is the
// table's entry count so far.
func (lw *learnedWriter) blockDone(entries uint64) {
	lw.counts = append(lw.counts, entries-lw.lastEnd)
	lw.lastEnd = entries
}

// finish returns the meta block: the model, or the reason there is none.
// tableSize is the size of the table, estimated before its index and
// filter are written.
func (lw *learnedWriter) finish(tableSize uint64) []byte {
	m, reason := lw.b.Finish()
	// The position-to-block map takes 12 to 16 bytes per block in
	// memory (see learnedIndex); the model may take at most MaxShare of
	// the table (1% by default).
	if m != nil && float64(m.Size()+12*len(lw.counts)) > lw.maxShare*float64(tableSize) {
		m, reason = nil, learned.ReasonTooLarge
	}
	if m == nil {
		return []byte{learnedBlockVersion, byte(reason)}
	}
	b := []byte{learnedBlockVersion, byte(learned.ReasonNone)}
	b = binary.AppendUvarint(b, uint64(lw.restartIv))
	b = binary.AppendUvarint(b, lw.lastEnd)
	b = binary.AppendUvarint(b, uint64(len(lw.counts)))
	for _, c := range lw.counts {
		b = binary.AppendUvarint(b, c)
	}
	return m.Encode(b)
}

// learnedIndex is a decoded learned-index block with a model.
type learnedIndex struct {
	model     *learned.Model
	restartIv int
	// ivShift is log2(restartIv) when restartIv is a power of two (the
	// default, 16), else -1: a lookup divides by shifting.
	ivShift int
	// blocks[i] holds the position of block i's first entry and the
	// block's offset in the file (the block cache's key); blocks[n].start
	// is the table's entry count. A lookup finds both in one cache line,
	// without reading the index's entries. Offsets take 32 bits: in a
	// table whose blocks reach past 4 GiB, farOffsets is set and the
	// offsets come from the index.
	blocks     []learnedBlock
	farOffsets bool
	// inPlace: the data blocks lie back to back, so a lookup can read a
	// block from the table's mapping knowing only blocks[i] and blocks[i+1].
	inPlace bool
	// The block of position p is found from a first guess, at or before it,
	// stepping over block starts in blocks. When the blocks hold nearly
	// equal entry counts (as a table of keys and value pointers does), the
	// guess is arithmetic: (p*mul)>>32 - back, off by at most maxInterpSteps
	// blocks, and the lookup's one miss is on blocks. Otherwise blockOf[p >>
	// shift] is the block holding position p rounded down to a multiple of
	// 1 << shift, a second miss before the one on blocks.
	mul     uint64
	back    int
	blockOf []uint32 // nil when the guess is arithmetic
	shift   uint
}

// maxInterpSteps bounds the blocks an arithmetic guess may fall short by
// (blocks entries are 8 bytes: a cache line holds 8).
const maxInterpSteps = 4

type learnedBlock struct {
	start, off uint32
}

// decodeLearned parses a learned-index block. idx is nil when the block
// records a reason instead of a model.
func decodeLearned(b []byte, numBlocks int, numEntries uint64, file string, off uint64) (idx *learnedIndex, reason learned.Reason, err error) {
	bad := func(format string, args ...any) error {
		return base.CorruptionErrorf(file, int64(off), "learned-index block: "+format, args...)
	}
	if len(b) < 2 {
		return nil, 0, bad("%d bytes", len(b))
	}
	if b[0] != learnedBlockVersion {
		// A later version: read the table without its model.
		return nil, learned.ReasonDisabled, nil
	}
	if reason = learned.Reason(b[1]); reason != learned.ReasonNone {
		if len(b) != 2 {
			return nil, 0, bad("reason %d followed by %d bytes", b[1], len(b)-2)
		}
		return nil, reason, nil
	}
	b = b[2:]
	var f [3]uint64
	for i := range f {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, 0, bad("bad header")
		}
		f[i], b = v, b[n:]
	}
	riv, entries, nb := f[0], f[1], f[2]
	if riv < 1 || riv > maxRestartInterval {
		return nil, 0, bad("restart interval %d", riv)
	}
	if nb != uint64(numBlocks) || entries != numEntries || entries > learned.MaxPosition {
		return nil, 0, bad("%d blocks of %d entries, the table has %d of %d", nb, entries, numBlocks, numEntries)
	}
	x := &learnedIndex{restartIv: int(riv), blocks: make([]learnedBlock, nb+1)}
	var sum uint64
	for i := range nb {
		c, n := binary.Uvarint(b)
		if n <= 0 || c == 0 || c > entries-sum {
			return nil, 0, bad("bad entry count of block %d", i)
		}
		b = b[n:]
		x.blocks[i].start = uint32(sum)
		sum += c
	}
	if sum != entries {
		return nil, 0, bad("blocks hold %d entries, not %d", sum, entries)
	}
	x.blocks[nb].start = uint32(sum)
	if x.model, err = learned.Decode(b); err != nil {
		return nil, 0, bad("%v", err)
	}
	if uint64(x.model.LastPosition()) >= entries {
		return nil, 0, bad("model reaches position %d of %d entries", x.model.LastPosition(), entries)
	}
	x.ivShift = -1
	if riv&(riv-1) == 0 {
		x.ivShift = bits.TrailingZeros64(riv)
	}
	x.buildBlockOf()
	return x, learned.ReasonNone, nil
}

// setOffsets copies the data blocks' offsets from the index (which
// decodeLearned checked has as many entries as the model has blocks), and
// sets blocks[n].off to where the last block's trailer ends. inPlace is
// set when the blocks lie back to back, so that block i is the bytes
// [blocks[i].off, blocks[i+1].off), trailer included (as the writer lays
// them out).
func (x *learnedIndex) setOffsets(index *indexArray) {
	n := len(index.entries)
	x.inPlace = n > 0
	for i := range index.entries {
		h := index.entries[i].handle
		end := h.Offset + h.Length + blockTrailerLen
		if end > math.MaxUint32 {
			x.farOffsets, x.inPlace = true, false
			return
		}
		x.blocks[i].off = uint32(h.Offset)
		if i+1 < n && index.entries[i+1].handle.Offset != end {
			x.inPlace = false
		}
	}
	if n > 0 {
		last := index.entries[n-1].handle
		x.blocks[n].off = uint32(last.Offset + last.Length + blockTrailerLen)
	}
}

// buildBlockOf sets up how a position maps to its block: arithmetically
// when the linear guess p*n/entries is never more than maxInterpSteps
// blocks short of the block (after moving it back by its largest
// overshoot); otherwise through a position-to-block table, one slot per
// the smallest power of two at or above the mean block's entry count, so
// a lookup steps over one or two block starts.
func (x *learnedIndex) buildBlockOf() {
	if over, short, ok := x.guessSpread(); ok && over+short <= maxInterpSteps {
		x.back = over
		x.blockOf = nil
		return
	}
	x.buildSlots()
}

// guessSpread sets mul and returns by how many blocks the arithmetic
// guess overshoots and falls short at most; ok is false for a table
// without entries.
func (x *learnedIndex) guessSpread() (over, short int, ok bool) {
	n := len(x.blocks) - 1
	total := uint64(x.blocks[n].start)
	if total == 0 || n == 0 {
		return 0, 0, false
	}
	x.mul = (uint64(n) << 32) / total
	// The guess grows with p and the block is a step function of it:
	// within block b the guess overshoots most at the block's last
	// position and falls shortest at its first.
	for b := range n {
		over = max(over, x.guess(int(x.blocks[b+1].start)-1)-b)
		short = max(short, b-x.guess(int(x.blocks[b].start)))
	}
	return over, short, true
}

// guess is the arithmetic first guess of position p's block, before
// moving back.
func (x *learnedIndex) guess(p int) int { return int((uint64(p) * x.mul) >> 32) }

// buildSlots makes the position-to-block table (see buildBlockOf).
func (x *learnedIndex) buildSlots() {
	n := len(x.blocks) - 1
	total := uint64(x.blocks[n].start)
	mean := max(total/uint64(max(n, 1)), 1)
	x.shift = uint(bits.Len64(mean - 1))
	slots := (total >> x.shift) + 1
	x.blockOf = make([]uint32, slots)
	blk := 0
	for s := range x.blockOf {
		p := uint32(uint64(s) << x.shift)
		for blk+1 < n && x.blocks[blk+1].start <= p {
			blk++
		}
		x.blockOf[s] = uint32(blk)
	}
}

// block returns the data block holding position p (p < entries).
func (x *learnedIndex) block(p int) int {
	var b int
	if x.blockOf == nil {
		b = max(x.guess(p)-x.back, 0)
	} else {
		b = int(x.blockOf[p>>x.shift])
	}
	for x.blocks[b+1].start <= uint32(p) {
		b++
	}
	return b
}

// window is where a point lookup searches: block i, its restart
// intervals [jlo, jhi] (jhi < 0: all of them), skipping the first skip
// entries from restart point jlo. With a learned index it also holds the
// block's restart count and the entries the search reads, about [from,
// to) counted from the block's first; ok is false when the model places
// the key outside the table.
type window struct {
	i, jlo, jhi, skip int
	off               uint64 // block i's offset in the file
	numRestarts       int
	from, to          int
	ok                bool
}

// window maps the model's prediction for (ukey, trailer) to a block and
// its restart intervals.
func (x *learnedIndex) window(index *indexArray, ukey []byte, trailer uint64) window {
	lo, hi, ok := x.model.Predict(ukey)
	if !ok {
		return window{jhi: -1}
	}
	// The key's first entry, if present, lies in [lo, hi]: in block i or,
	// when the window spans blocks, in the first of them whose separator
	// is not below the search key.
	// (blocks[n].start, the entry count, is above hi: the loop stops at
	// the last block.)
	i := x.block(lo)
	for x.blocks[i+1].start <= uint32(hi) && index.below(i, ukey, trailer) {
		i++
	}
	start, end := x.blocks[i].start, x.blocks[i+1].start
	first := int(uint32(max(lo, int(start))) - start)
	last := int(uint32(min(hi, int(end)-1)) - start)
	jlo := x.interval(first)
	return window{
		i:           i,
		off:         x.offset(index, i),
		jlo:         jlo,
		jhi:         x.interval(last),
		skip:        first - jlo*x.restartIv,
		numRestarts: x.interval(int(end-start)-1) + 1,
		from:        jlo * x.restartIv,
		to:          last + 2,
		ok:          true,
	}
}

// offset returns the file offset of block i.
func (x *learnedIndex) offset(index *indexArray, i int) uint64 {
	if x.farOffsets {
		return index.entries[i].handle.Offset
	}
	return uint64(x.blocks[i].off)
}

// interval returns the restart interval of the entry with ordinal p (p >=
// 0) in its block.
func (x *learnedIndex) interval(p int) int {
	if x.ivShift >= 0 {
		return p >> x.ivShift
	}
	return p / x.restartIv
}

// touch starts loading the lines of block b (block w.i) that the search
// of w reads: its last line, which holds the restart array, and the
// window's entries, placed by scaling their ordinals by the block's mean
// entry size (close enough to be mostly right). See touchWindow.
func (x *learnedIndex) touch(b []byte, w *window) uint64 {
	per := len(b) / int(x.blocks[w.i+1].start-x.blocks[w.i].start)
	return touchWindow(b, w.from*per, w.to*per)
}

// size returns the memory the learned index holds, in bytes.
func (x *learnedIndex) size() int {
	return x.model.Size() + 8*len(x.blocks) + 4*len(x.blockOf)
}

// LearnedStats counts what the learned indexes of a set of Readers (a
// DB's) hold and serve: pass one to ReaderOptions.LearnedStats. Safe for
// concurrent use; its counters are striped so that readers on different
// cores do not share a cache line.
type LearnedStats struct {
	stripes [learnedStripes]learnedStripe
}

const (
	learnedStripeBits = 3
	learnedStripes    = 1 << learnedStripeBits
)

type learnedStripe struct {
	hits, fallbacks, inPlace atomic.Uint64
	// Gauges of the open Readers, changed at open and Close.
	tables, without, segments, bytes, tableBytes atomic.Int64
	_                                            [8]byte
}

// stripe returns the stripe of the calling goroutine (see stripe.Of).
func (s *LearnedStats) stripe() *learnedStripe {
	return &s.stripes[stripe.Of(learnedStripeBits)]
}

func (s *LearnedStats) hit() {
	if s != nil {
		s.stripe().hits.Add(1)
	}
}

func (s *LearnedStats) servedInPlace() {
	if s != nil {
		s.stripe().inPlace.Add(1)
	}
}

func (s *LearnedStats) fallback() {
	if s != nil {
		s.stripe().fallbacks.Add(1)
	}
}

// LearnedMetrics is a snapshot of a LearnedStats.
type LearnedMetrics struct {
	// Tables is the number of open tables with a model; Without the number
	// of open tables without one (refused when written, written without,
	// or read with the model turned off).
	Tables, Without int64
	// Segments and Bytes are the models' segments and the memory they hold
	// (with their position-to-block maps); TableBytes is the size of the
	// tables that have them.
	Segments, Bytes, TableBytes int64
	// Hits counts point lookups a model served; Fallbacks those that
	// binary-searched the index of a table without one. InPlace counts
	// the hits that read their window from the table's mapping (see
	// Reader.getInPlace) rather than through the block cache.
	Hits, Fallbacks, InPlace uint64
}

// Metrics sums the stripes.
func (s *LearnedStats) Metrics() LearnedMetrics {
	var m LearnedMetrics
	if s == nil {
		return m
	}
	for i := range s.stripes {
		st := &s.stripes[i]
		m.Hits += st.hits.Load()
		m.Fallbacks += st.fallbacks.Load()
		m.InPlace += st.inPlace.Load()
		m.Tables += st.tables.Load()
		m.Without += st.without.Load()
		m.Segments += st.segments.Load()
		m.Bytes += st.bytes.Load()
		m.TableBytes += st.tableBytes.Load()
	}
	return m
}

// String prints the snapshot in one line.
func (m LearnedMetrics) String() string {
	share := 0.0
	if m.TableBytes > 0 {
		share = 100 * float64(m.Bytes) / float64(m.TableBytes)
	}
	return fmt.Sprintf("%d tables with a model (%d without), %d segments, %d bytes (%.2f%% of their tables), %d hits (%d in place), %d fallbacks",
		m.Tables, m.Without, m.Segments, m.Bytes, share, m.Hits, m.InPlace, m.Fallbacks)
}

// noteOpen adds (sign 1) or removes (sign -1) a Reader's learned index
// from the gauges.
func (s *LearnedStats) noteOpen(r *Reader, sign int64) {
	if s == nil {
		return
	}
	st := &s.stripes[0]
	if r.lidx == nil {
		st.without.Add(sign)
		return
	}
	st.tables.Add(sign)
	st.segments.Add(sign * int64(r.lidx.model.Segments()))
	st.bytes.Add(sign * int64(r.lidx.size()))
	st.tableBytes.Add(sign * int64(r.dataEnd+footerLen))
}

// LearnedInfo describes a table's learned index.
type LearnedInfo struct {
	// Present: the table has a model (and the Reader uses it).
	Present bool
	// Reason says why there is none: learned.ReasonDisabled for a table
	// written without the block or read with the model turned off, or
	// the writer's reason.
	Reason   learned.Reason
	Segments int
	Bound    int // the model's error bound, in positions
	Bytes    int // memory held
}

// Learned describes the table's learned index.
func (r *Reader) Learned() LearnedInfo {
	if r.lidx == nil {
		return LearnedInfo{Reason: r.lreason}
	}
	return LearnedInfo{Present: true, Segments: r.lidx.model.Segments(), Bound: r.lidx.model.Bound(), Bytes: r.lidx.size()}
}
