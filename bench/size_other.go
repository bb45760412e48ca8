//go:build !unix

package bench

import "io/fs"

// FileDiskSize returns the file's size where allocated blocks are unknown.
func FileDiskSize(info fs.FileInfo) int64 { return info.Size() }
