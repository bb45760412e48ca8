//go:build linux

package crc32c

import (
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFaultIsAPanic: a read of memory that faults part way through the
// fold (a mapped file truncated under a reader) becomes a panic that
// debug.SetPanicOnFault lets the caller recover, as it does in Go code,
// not a crash of the process. The value log reads its mappings this way
// (see vfs.BeginMapped).
func TestFaultIsAPanic(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	require.NoError(t, syscall.Mprotect(mem[page:], syscall.PROT_NONE))
	src := mem[page-512 : page+512] // the fold reaches the second page after 512 bytes
	dst := make([]byte, len(src))
	withFold(t, func(t *testing.T) {
		for _, f := range []func(){
			func() { CopyUpdate(dst, src, 0, nil) },
			func() { UpdateAhead(0, src, nil) },
		} {
			faulted := func() (faulted bool) {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				defer func() { faulted = recover() != nil }()
				f()
				return false
			}()
			require.True(t, faulted)
		}
	})
}
