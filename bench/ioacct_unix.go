//go:build unix

package bench

import "syscall"

// processWriteBytes returns the bytes this process has sent to storage:
// the kernel's block-output count (getrusage ru_oublock, in 512-byte units),
// which Linux charges when a page is dirtied, so buffered writes count as
// soon as they are made. External engines read the same counter for their
// child process (RUSAGE_CHILDREN), so every engine is measured alike.
func processWriteBytes() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Oublock) * 512
}
