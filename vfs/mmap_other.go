//go:build !unix

package vfs

// MapFile never maps on this platform: ok is false, and the caller reads
// with ReadAt.
func MapFile(f File, size int64) (data []byte, ok bool, err error) { return nil, false, nil }

// Unmap does nothing on this platform.
func Unmap(data []byte) error { return nil }
