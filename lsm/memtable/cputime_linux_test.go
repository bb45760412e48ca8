package memtable

import (
	"syscall"
	"unsafe"
)

// threadCPUNanos returns the CPU time used by the calling OS thread, or -1.
func threadCPUNanos() int64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		return -1
	}
	return ts.Nano()
}
