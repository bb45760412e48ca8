//go:build linux

package vfs

import (
	"os"
	"syscall"
)

// fdatasync syncs f's data through its raw descriptor. Going through
// SyscallConn keeps the descriptor referenced while the syscall runs, and a
// closed file reports os.ErrClosed like every other os.File method.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		// Control fails only when the file is closed (or being closed).
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: os.ErrClosed}
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
