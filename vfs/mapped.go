package vfs

import (
	"errors"
	"runtime/debug"
	"sync/atomic"
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

// MapAlign is the write size and alignment that lets a file written
// once and then mapped (see MapFile) be mapped with huge pages: 2 MiB, the
// huge page of amd64 and arm64. Linux filesystems whose page cache holds
// large folios (ext4 and xfs on current kernels) cache a write of 2 MiB
// at a 2 MiB-aligned offset as one huge folio, and a read-only mapping of
// the file, placed 2 MiB-aligned by the kernel, maps each such folio with
// one page-table entry. A random read of the mapping then misses the TLB
// far less (one entry covers 512 times the bytes) and its page walk is
// one level shorter. Written in smaller pieces, the same bytes are cached
// in small folios and mapped 4 KiB at a time. Writers of immutable files
// (value logs, tables) buffer whole chunks of MapAlign and write them at
// multiples of it.
const MapAlign = 2 << 20

// PopulateAsync runs Populate(data) in a goroutine of its own, so that
// the reads the mapping was made for need not wait, and returns the
// function that stops it and waits for it to end: call it before Unmap.
func PopulateAsync(data []byte) (stop func()) {
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		Populate(data, stopping.Load)
	}()
	return func() {
		stopping.Store(true)
		<-done
	}
}
