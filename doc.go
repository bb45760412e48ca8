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
// Open a database, write and read:
//
//	db, err := strata.Open("demo-db", nil)
//	...
//	err = db.Set([]byte("k"), []byte("v"), strata.Sync)
//	v, err := db.Get([]byte("k"))
//
// Errors wrap ErrNotFound, ErrCorruption and ErrClosed; match them with
// errors.Is.
package strata
