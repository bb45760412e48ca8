//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"syscall"
)

// MapFile maps the first size bytes of f read-only into memory, when f is
// a file of the operating system's filesystem on a 64-bit platform; ok is
// false otherwise (a MemFS or ErrorFS file, or size 0), and the caller
// reads with ReadAt instead. Release the mapping with Unmap before closing
// f.
//
// The mapping shares the page cache: it allocates nothing, and its pages
// count in the process's resident set only while the kernel keeps them.
// The caller must only map a file that is never written again, or one
// only appended to, of which it reads the bytes already written (size
// may exceed the file's: pages past its end fault when read). It must
// expect a fault (SIGBUS) if the file shrinks under the mapping; see
// BeginMapped.
func MapFile(f File, size int64) (data []byte, ok bool, err error) {
	if size <= 0 || strconv.IntSize < 64 || size > math.MaxInt {
		return nil, false, nil
	}
	sc, isConn := f.(syscall.Conn)
	if !isConn {
		return nil, false, nil
	}
	if _, isDisk := f.(diskFile); !isDisk {
		// Wrappers may intercept reads (fault injection); respect them.
		return nil, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false, nil
	}
	var merr error
	if cerr := rc.Control(func(fd uintptr) {
		data, merr = syscall.Mmap(int(fd), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	}); cerr != nil {
		return nil, false, nil
	}
	if merr != nil {
		if errors.Is(merr, syscall.ENODEV) || errors.Is(merr, syscall.EACCES) {
			// A filesystem that cannot map: read with ReadAt.
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("vfs: mmap of %d bytes: %w", size, merr)
	}
	return data, true, nil
}

// Unmap releases a mapping made by MapFile. No slice of it may be used
// afterwards.
func Unmap(data []byte) error {
	if data == nil {
		return nil
	}
	if err := syscall.Munmap(data); err != nil {
		return fmt.Errorf("vfs: munmap: %w", err)
	}
	return nil
}
