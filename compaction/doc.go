// Package compaction turns sorted input (a memtable being flushed, or the
// SSTables chosen for a compaction) into new SSTables. It decides which
// entries survive:
//
//   - Of the versions of a user key, it keeps the newest one in each snapshot
//     stripe. A stripe is the set of sequence numbers that the same open
//     snapshots can see; with snapshots S0 < S1 < ..., stripe 0 holds seqs
//     <= S0, stripe 1 holds S0 < seq <= S1, and so on, and the last stripe
//     holds everything newer than the newest snapshot. Readers in one stripe
//     cannot tell two versions in that stripe apart except by the newest.
//   - A point entry covered by a range tombstone of the same stripe is
//     dropped.
//   - At the bottom of the tree (nothing older lies below the output), point
//     and range tombstones of stripe 0 are dropped: there is nothing left for
//     them to delete.
//
// Output files are cut at user-key boundaries once they pass a target size,
// so no user key spans two files. Range tombstones are clipped to each
// file's span, and a file's largest key is an exclusive sentinel when a
// tombstone reaches past its last point key.
//
// It also decides what to compact, as pure functions of a version and
// PickerOptions, so that the decisions are tested as tables (testdata/):
// Compute sizes the levels and scores them, PickAuto picks the most urgent
// compaction (or a trivial move, or an in-place rewrite of a marked file),
// PickManual takes the closure of the files overlapping a key range, and
// Debt estimates how far compaction is behind. Every compaction is
// described by one Pick, whose Kind says what it does and whose Reason
// says why. The defaults of the options that shape the tree live here.
//
// Scheduling (which picks run when, and concurrently), installing the
// results in the manifest and the statistics are the DB's, not this
// package's.
package compaction
