// Package gc decides how the value logs' garbage is collected. It holds no
// state and does no I/O: it reads a version of the tree (and what the DB
// says about files it is writing or already collecting) and returns
// decisions, which the DB carries out through compaction and the manifest.
//
// # The ledger
//
// A value log's bytes are its header and footer and its records. A record
// is live while some table of the version points to it; every table
// records, per value log, the record bytes its pointers reach
// (manifest.FileMetadata.VlogRefs), and a version sums them
// (manifest.Version.VlogLive). So the ledger is exact and needs no
// separate accounting: when a compaction drops a pointer (the entry was
// overwritten, deleted, range-deleted or filtered), the output tables no
// longer reference the record and the value log's live bytes fall by the
// record's length in the very version edit that installs the compaction.
// Garbage is the record bytes no table references.
//
// A value log the DB is still filling (its pointers are in memtables, not
// yet in tables) is pinned: it has no table references yet, but is not
// garbage.
//
// # The reverse index
//
// ReverseIndex answers, exactly, which tables of a version still point into
// a value log, from the same per-table references.
//
// # Decisions
//
// A Policy returns value logs to delete (no live bytes: passive collection)
// and value logs to collect, each with a mechanism:
//
//   - ByRecompaction: the tables that point into the value log (the reverse
//     index) are rewritten in place; the rewrite copies the live values they
//     reference into a new value log and stores new pointers, after which
//     the old file has no live bytes and is deleted.
//   - ByRewrite (WiscKey, Badger): the value log's records that are still the
//     newest version of their key are copied into a new value log and their
//     keys repointed through the write path; the old entries, now shadowed,
//     leave the tree with the next compactions that reach them.
//
// The policies: Passive deletes only; ReverseLookup (the default) adds
// recompaction of value logs past a garbage ratio, and of the most
// garbage-laden ones while space amplification is above a ceiling; Rewrite
// is ReverseLookup's selection with the rewrite mechanism; Cost keeps space
// amplification under a budget and picks, per value log, the mechanism that
// writes the fewest bytes per byte freed.
package gc
