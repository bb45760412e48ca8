//go:build !linux

package vfs

// Populate does nothing on this platform: reads of a mapping fault its
// pages in as they come.
func Populate(data []byte, stop func() bool) {}
