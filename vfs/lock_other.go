//go:build !unix

package vfs

import (
	"io"
	"os"
)

// Without flock the file is only created; the engine's in-process registry
// still keeps a second DB of this process out.
func lockFile(name string) (io.Closer, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}
