//go:build amd64 || arm64

package prefetch

// lines prefetches the cache lines of the n > 0 bytes at address p.
func lines(p, n uintptr)
