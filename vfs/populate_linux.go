package vfs

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): fault the range's
// pages in for reading, as a read of each would, in one call.
const madvPopulateRead = 22

// Populate maps the pages of data, a mapping made by MapFile, that the
// page cache holds into the process's page tables, and then reads a byte
// of each, so that the first read of each page by the caller neither
// faults nor pays the first access. Pages the page cache does not hold
// are left alone: populating them would read them from the disk, and a
// large file read at random needs few of them. It works through data in
// pieces of MapAlign bytes, asks stop before each, and returns when stop
// says so (the caller is about to unmap data), when the kernel refuses
// (one older than 5.14), or when the file shrank under the mapping, since
// populating is only an optimization.
//
// Why both steps: measured on the project's 2-core virtual machine (ext4,
// fault-around of 64 KiB), 200,000 random 4 KiB reads of 800 MiB of
// value logs the page cache held in 4 KiB pages (written a synced write
// at a time) cost 3.5-3.9 µs each through a fresh mapping and 0.65 µs
// through one read before. The populate call (34 ms for the 800 MiB) took
// them to 2.3 µs; the first access of each page (1.6 µs a page, paid once
// per mapping) took the rest. Files the page cache holds in 2 MiB folios
// (written 2 MiB at a time, see MapAlign) are mapped a folio at a time,
// and both steps cost little for them.
func Populate(data []byte, stop func() bool) {
	if len(data) == 0 {
		return
	}
	ps := os.Getpagesize()
	vec := make([]byte, (MapAlign+ps-1)/ps)
	for off := 0; off < len(data); off += MapAlign {
		if stop() {
			return
		}
		chunk := data[off:min(off+MapAlign, len(data))]
		n := (len(chunk) + ps - 1) / ps
		if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return
		}
		for i := 0; i < n; {
			if vec[i]&1 == 0 {
				i++
				continue
			}
			j := i + 1
			for j < n && vec[j]&1 != 0 {
				j++
			}
			run := chunk[i*ps : min(j*ps, len(chunk))]
			if err := syscall.Madvise(run, madvPopulateRead); err != nil {
				return
			}
			if touchPages(run, ps) != nil {
				return
			}
			i = j
		}
	}
}

// touchPages reads a byte of each page of b, a piece of a mapping; a fault
// (the file shrank) is an error.
func touchPages(b []byte, ps int) (err error) {
	old := BeginMapped()
	defer EndMapped(old, &err)
	var sum byte
	for i := 0; i < len(b); i += ps {
		sum += b[i]
	}
	touchSink.Store(uint32(sum))
	return nil
}

// touchSink keeps touchPages' loads from being optimized away.
var touchSink atomic.Uint32
