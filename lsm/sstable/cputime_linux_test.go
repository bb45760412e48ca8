package sstable

import (
	"runtime"
	"syscall"
	"testing"
)

// cpuTimer reports a benchmark's CPU time per operation on the benchmark's
// own thread ("cpu-ns/op"), which, unlike ns/op, does not count the time
// other processes of a shared machine run instead of it.
type cpuTimer struct{ start int64 }

func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// startCPU locks the goroutine to its thread and starts timing.
func startCPU() cpuTimer {
	runtime.LockOSThread()
	return cpuTimer{threadCPU()}
}

// stop reports the CPU time per operation.
func (c cpuTimer) stop(b *testing.B) {
	b.ReportMetric(float64(threadCPU()-c.start)/float64(b.N), "cpu-ns/op")
	runtime.UnlockOSThread()
}
