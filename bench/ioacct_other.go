//go:build !unix

package bench

// processWriteBytes is not available on this platform; write amplification
// is then reported as 0.
func processWriteBytes() int64 { return 0 }
