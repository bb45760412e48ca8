//go:build !unix

package strata

import "os"

// Without flock, only the in-process registry protects the directory.
func lockFile(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

func unlockFile(f *os.File) error { return f.Close() }
