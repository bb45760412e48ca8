// Package prefetch asks the processor to start loading memory into its
// caches ahead of use, so that the loads of a later read overlap other
// work instead of stalling it. A prefetch is a hint: it never faults, even
// on memory that is not mapped or not resident, and has no effect a
// program can observe other than time.
package prefetch

import "unsafe"

// Lines starts loading every 64-byte cache line b spans. It is a no-op
// for an empty b and on processors without a prefetch instruction here.
func Lines(b []byte) {
	if len(b) == 0 {
		return
	}
	// An address, not a pointer: a prefetch of a stale address (had the
	// memory moved) would be harmless, and the assembly keeps nothing.
	lines(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
}
