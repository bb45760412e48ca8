//go:build unix

package bench

import (
	"io/fs"
	"syscall"
)

// FileDiskSize returns the disk space a file occupies (its allocated blocks),
// which for sparse, preallocated files (Badger's logs) is less than its
// apparent size.
func FileDiskSize(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}
