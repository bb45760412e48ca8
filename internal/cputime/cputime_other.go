//go:build !linux

// Package cputime measures a benchmark's CPU time on its own thread, for
// the engine's benchmarks.
package cputime

import "testing"

// Timer reports nothing where thread CPU time is not measured.
type Timer struct{}

// Start does nothing here.
func Start() Timer { return Timer{} }

// Stop does nothing here.
func (Timer) Stop(*testing.B) {}
