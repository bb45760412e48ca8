package vfs

import (
	"errors"
	"runtime/debug"
)

// ErrMappedFault is the error EndMapped reports when the memory of a mapped
// file faulted: the file shrank under its mapping (truncated by someone
// else), or its storage failed.
var ErrMappedFault = errors.New("vfs: fault reading a mapped file (truncated, or an I/O error)")

// BeginMapped prepares the calling goroutine to read memory mapped by
// MapFile: a fault there becomes a recoverable panic instead of killing
// the process. Pair it with a deferred EndMapped in the same function:
//
//	old := vfs.BeginMapped()
//	defer vfs.EndMapped(old, &err)
func BeginMapped() (old bool) { return debug.SetPanicOnFault(true) }

// EndMapped, deferred after BeginMapped, restores the goroutine's fault
// handling and turns a fault into *err = ErrMappedFault. Other panics go
// on.
func EndMapped(old bool, err *error) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		if _, fault := r.(interface{ Addr() uintptr }); fault {
			*err = ErrMappedFault
			return
		}
		panic(r)
	}
}
