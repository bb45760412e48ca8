//go:build unix

package vfs

import (
	"io"
	"os"
	"syscall"
)

// fileLock is a held flock; Close releases it and closes the file.
type fileLock struct{ f *os.File }

func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	return fileLock{f}, nil
}

func (l fileLock) Close() error {
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
