package vlog

import "github.com/strata-db/strata/internal/base"

// Policy decides which values leave the tree for a value log. The DB asks
// it at flush time, once per SET entry; a value it separates is written to
// the flush's value log and the tree keeps a Pointer in its place.
// Implementations must be safe for concurrent use.
type Policy interface {
	Separate(key []byte, valueLen int) bool
}

// Threshold separates values of at least that many bytes; a negative
// threshold separates nothing (and 0 separates every value, empty ones
// included). It is the DB's default policy.
type Threshold int

// Separate reports whether valueLen >= t, for t >= 0.
func (t Threshold) Separate(_ []byte, valueLen int) bool {
	return t >= 0 && valueLen >= int(t)
}

// Observer is implemented by policies that adapt to the workload, with the
// goal of a threshold that follows value sizes, the overwrite rate and the
// mix of point reads and scans. The DB reports what it sees to a Policy
// that also implements Observer; Threshold does not.
type Observer interface {
	// ObserveWrite reports a committed SET. It is called on the write path
	// and must be cheap (a few atomic adds).
	ObserveWrite(keyLen, valueLen int)
	// ObserveRead reports a point read that found a value, and whether
	// the value was separated.
	ObserveRead(valueLen int, separated bool)
	// ObserveScan reports rows an iterator returned (the DB may report a
	// scan in pieces): rows in all, separatedRows of them through a
	// pointer.
	ObserveScan(rows int, separatedRows int)
	// ObserveGarbage reports a value log's garbage (from GC): garbageBytes
	// of its totalBytes are no longer referenced.
	ObserveGarbage(fileNum base.FileNum, garbageBytes, totalBytes uint64)
}

var (
	_ Policy   = Threshold(0)
	_ Policy   = (*AdaptiveThreshold)(nil)
	_ Observer = (*AdaptiveThreshold)(nil)
)
