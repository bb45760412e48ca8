// Package merging combines internal iterators: MergingIter yields the union
// of several sorted sources in internal-key order (newest version of a user
// key first), and LevelIter concatenates the non-overlapping files of one
// level, opening each file's iterator only when the position reaches it.
//
// Neither hides anything: shadowed versions, tombstones and entries above a
// reader's snapshot all pass through. The DB's iterator applies those rules.
package merging
