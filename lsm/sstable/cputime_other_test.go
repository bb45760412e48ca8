//go:build !linux

package sstable

import "testing"

// cpuTimer reports nothing where thread CPU time is not measured.
type cpuTimer struct{}

func startCPU() cpuTimer         { return cpuTimer{} }
func (cpuTimer) stop(*testing.B) {}
