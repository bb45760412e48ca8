// Package cputime measures a benchmark's CPU time on its own thread, for
// the engine's benchmarks.
package cputime

import (
	"runtime"
	"syscall"
	"testing"
)

// Timer reports a benchmark's CPU time per operation on the benchmark's
// own thread ("cpu-ns/op"), which, unlike ns/op, does not count the time
// other processes of a shared machine run instead of it. Background
// goroutines (compactions, the garbage collector) are not counted.
type Timer struct{ start int64 }

func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Start locks the goroutine to its thread and starts timing.
func Start() Timer {
	runtime.LockOSThread()
	return Timer{threadCPU()}
}

// Stop reports the CPU time per operation and unlocks the thread.
func (c Timer) Stop(b *testing.B) {
	b.ReportMetric(float64(threadCPU()-c.start)/float64(b.N), "cpu-ns/op")
	runtime.UnlockOSThread()
}
