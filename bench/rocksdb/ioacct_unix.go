//go:build unix

package rocksdb

import (
	"os"
	"syscall"
)

// childWriteBytes is the bytes a finished db_bench process sent to storage:
// its ru_oublock (512-byte blocks), which Linux charges when a page is
// dirtied, flushes and compactions of its background threads included.
// It is the same block-output count the core reads for in-process engines
// (getrusage RUSAGE_SELF ru_oublock). Taking it from the child's own
// rusage, as wait4 returned it, rather than from the difference of
// getrusage(RUSAGE_CHILDREN) around the run, counts this child only, even
// when the process waits for other children at the same time.
func childWriteBytes(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		return int64(ru.Oublock) * 512
	}
	return 0
}
