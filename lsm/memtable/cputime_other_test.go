//go:build !linux

package memtable

// threadCPUNanos is not available here.
func threadCPUNanos() int64 { return -1 }
