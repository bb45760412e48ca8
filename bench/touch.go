package bench

import "sync/atomic"

// cacheLine is the stride of Touch: one load per 64-byte cache line.
const cacheLine = 64

// Touch reads one byte of every 64-byte cache line of b (and its last byte)
// and returns their sum. Every engine's Scan passes each key and value it
// returns through Touch (and the sum to Consume), so that each one delivers
// the bytes themselves to the caller, as an application that uses the
// values would need: an engine that hands out slices of a memory-mapped
// file (Badger's value log) would otherwise return a value having read
// only its first cache line, while one that copies or checksums values has
// read all of them. For bytes an engine has just copied the loads hit the
// CPU cache and cost little; for bytes still in the page cache they pay
// the memory traffic the engine put off. One load per 4 KiB page, as an
// earlier version did, reads 2 of a 4 KiB value's 64 cache lines.
func Touch(b []byte) uint64 {
	var s uint64
	for i := 0; i < len(b); i += cacheLine {
		s += uint64(b[i])
	}
	if len(b) > 0 {
		s += uint64(b[len(b)-1])
	}
	return s
}

// touchSink keeps the sums of Touch observable, so reading the bytes
// cannot be optimised away.
var touchSink atomic.Uint64

// Consume records a sum of Touch once per scan.
func Consume(sum uint64) { touchSink.Add(sum) }
