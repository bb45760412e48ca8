// Package strata is an embedded key-value store: an LSM tree built to keep
// large values out of the tree (in value logs) so that compaction moves
// small pointers instead of values.
//
// This package is the public face and stays thin: it wires the write path
// (batches, group commit, WAL, memtable), the read path (memtables, then
// levels; iterators that merge them), flushes and compactions together, and
// owns the background goroutines. The tree's parts live under lsm/, the
// compaction logic under compaction/, the filesystem under vfs/.
//
// Open a database, write and read (Example is the whole tour):
//
//	db, err := strata.Open("demo-db", nil)
//	...
//	err = db.Set([]byte("k"), []byte("v"), strata.Sync)
//	v, err := db.Get([]byte("k"))
//
// # Errors
//
// Errors wrap one of these markers; match them with errors.Is:
//
//   - ErrNotFound: Get found no visible value for the key.
//   - ErrCorruption: bytes on disk failed a checksum or could not be
//     decoded; errors.As with a *CorruptionError gives the file and offset.
//   - ErrNewerFormat: a file records a format version newer than this
//     build reads (a newer Strata wrote it); nothing is damaged.
//   - ErrClosed: the DB, an iterator or a snapshot was used after Close.
//   - ErrReadOnly: a write to a DB opened with Options.ReadOnly.
//   - ErrWritesStopped: a background error (a failed flush, compaction or
//     WAL write) stopped writes until the database is reopened.
//   - ErrTooLarge: a key above MaxKeySize or a value above MaxValueSize.
//   - ErrBatchTooLarge: a batch above 3 GiB, or more than a memtable holds.
//   - ErrInvalidTTL: SetWithTTL with a TTL that is not positive, or one
//     whose expiry falls at or before 1970 (a clock set before it).
//   - ErrNoMerger: a merge operand written or read without Options.Merger.
//   - ErrInvalidOperand: the merger's ValidateOperand refused an operand.
//   - ErrMergerMismatch: Open with another merger than the database records.
//   - ErrBulkLoadSync: a synced write (or Sync) during a bulk load.
//   - ErrNoCurrent: Open of a directory with database files but no CURRENT.
//   - ErrSharedStoreRequired: Open of a database with shared files without
//     Options.SharedStore.
//   - ErrDestroying: Open of a database whose Destroy did not finish.
//
// # Stability
//
// Until 1.0 the API may still change, but the names api_test.go pins stay,
// and a replaced function stays as a deprecated wrapper of its successor.
// Every file format records a version: a build refuses a newer one with
// ErrNewerFormat and reads every older one (README, "Stability").
package strata
