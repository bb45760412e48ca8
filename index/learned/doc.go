// Package learned is a learned index for the keys of one sorted, immutable
// set (an SSTable): an error-bounded piecewise-linear model from a key to
// its position in the set, so that a point lookup can go straight to a
// small window of positions instead of binary-searching an index.
//
// It owns the model: how it is fitted (Builder), how it predicts (Model),
// how it is encoded, and when a key set is refused because the model would
// not pay. It knows nothing of tables, blocks or files: the caller says
// what a position is (package sstable uses the ordinal of a key's first
// entry in the table) and maps predicted positions to its own layout.
//
// # Keys as integers
//
// The keys' shared prefix P (the longest common prefix of the first and
// last key) is removed, and the next 8 bytes, big-endian and zero-padded,
// make the key's integer x. For keys with the prefix, x is order
// preserving: a < b implies x(a) <= x(b). Distinct keys may share an x
// (they differ only after those 8 bytes, or only by trailing zero bytes);
// the model then trains on the first of them, and the spread (the largest
// distance in positions from the first key of such a run to its last) is
// added to every lookup window. A key without the prefix, or whose x lies
// outside [x of the first key, x of the last], is not in the set.
//
// # The model
//
// Segments are fitted in one pass over the keys by the shrinking-cone
// (greedy) algorithm: a segment starts at its first key's point (x0, y0)
// and keeps the range of slopes for which the line through (x0, y0) stays
// within ErrorBound positions of every point so far; a point that empties
// the range starts the next segment. A segment predicts
//
//	y(x) = round(y0 + slope * (x - x0))
//
// and once fitted, every key's prediction is recomputed with exactly that
// arithmetic and the largest error is stored as the model's bound (at most
// ErrorBound). A lookup of a key in the set finds its position in
// [y(x) - bound, y(x) + bound + spread].
//
// The segment of x is the last one whose x0 <= x. A radix table over the
// high bits of x - x0 of the first segment (rebuilt when a model is
// decoded, never stored) narrows that to the segments starting in x's
// bucket, usually one or two; a binary search picks among them.
//
// # Refusal
//
// Builder.Finish refuses to make a model, with a Reason the caller
// records, when the key set has fewer than MinKeys keys (a binary search
// is as fast), when it takes more than one segment per MinKeysPerSegment
// keys (the keys follow no line the error bound allows; the model would
// cost memory and time), or when the spread exceeds MaxSpread (many keys
// share the 8 bytes after the prefix: their windows would be wide). The
// caller refuses a model that takes more than MaxShare of the size of what
// it indexes (ReasonTooLarge), a size the Builder does not know.
//
// # Encoding
//
// All integers little-endian; uvarints as in encoding/binary, in their
// shortest form.
//
//	+-------------+-----------+-------------+--------------+---------------+
//	| version (1B)| bound     | spread      | last position| prefix length |
//	| = 1         | (uvarint) | (uvarint)   | (uvarint)    | (uvarint)     |
//	+-------------+-----------+-------------+--------------+---------------+
//	| prefix      | max x     | segments n  | x0[n]        | y0[n]         |
//	| (bytes)     | (u64)     | (uvarint)   | (u64 each)   | (u32 each)    |
//	+-------------+-----------+-------------+--------------+---------------+
//	| slope[n]    |
//	| (f32 bits)  |
//	+-------------+
//
// x0 strictly increases, y0 never decreases and stays at most the last
// position, slopes are finite and not negative, and x0[n-1] <= max x;
// Decode rejects anything else, and any trailing byte.
package learned
