// Package manifest owns the shape of the tree: which SSTables exist, at which
// level, with which key bounds. It holds
//
//   - FileMetadata: one SSTable's number, size, bounds and sequence range;
//   - VersionEdit: a change to the tree (files added and removed, the WAL
//     number recovery starts from, the next file number, the last sequence
//     number, the name of the database's merger), and its encoding;
//   - Version: an immutable snapshot of the tree, reference-counted so that
//     files stay on disk while any reader can still reach them;
//   - VersionSet: the current version and the MANIFEST file that records
//     every edit, with CURRENT naming the live manifest.
//
// The manifest file is a record log (package record) whose records are
// encoded version edits. The first record of a manifest is a full snapshot
// of the tree, so older manifests can be deleted once CURRENT names a new one.
//
//	MANIFEST-000005:  [edit: snapshot] [edit] [edit] ... (record log)
//	CURRENT:          "MANIFEST-000005\n"  (replaced by rename, then dir sync)
//
// Version edit encoding: a sequence of fields, each
//
//	+-----------+--------------+-------------------+
//	| tag (uvar)| length (uvar)| payload (length B)|
//	+-----------+--------------+-------------------+
//
// Tags 1..63 are required: a reader that does not know one reports
// corruption. Tags 64 and above are optional and skipped by readers that do
// not know them, so later features can add fields without breaking older
// binaries' ability to report a clear error.
//
//	tag 1  comparer name      bytes
//	tag 2  log number         uvarint
//	tag 3  next file number   uvarint
//	tag 4  last sequence      uvarint
//	tag 5  deleted file       uvarint level, uvarint file number
//	tag 6  new file           uvarint level, uvarint file number, uvarint size,
//	                          uvarint len + smallest internal key,
//	                          uvarint len + largest internal key,
//	                          uvarint smallest seq, uvarint largest seq,
//	                          uvarint flags (bit 0: has range deletions;
//	                          bit 1: value-log references follow; bit 2:
//	                          an expiry summary follows), then
//	                          if bit 1: uvarint count, count x (uvarint
//	                          value-log number, uvarint record bytes,
//	                          uvarint pointers), by value-log number;
//	                          if bit 2: uvarint earliest and latest expiry
//	                          (ms since the epoch), uvarint entries with
//	                          an expiry, uvarint point entries
//	tag 7  new value log      uvarint file number, uvarint size,
//	                          uvarint records, uvarint value bytes, then
//	                          for a value log without a footer (adopted
//	                          by recovery) uvarint records end; readers
//	                          ignore what follows the fields they know
//	tag 8  deleted value log  uvarint file number
//	tag 9  shared file        uvarint flags (bit 0: a value log, else a
//	                          table), uvarint file number, uvarint offset,
//	                          uvarint len + object name: the file (of the
//	                          version once the edit is applied) is shared,
//	                          its bytes the range [offset, offset + size)
//	                          of the object in the store (package remote);
//	                          the snapshot record lists every shared file
//	tag 64 merger name        bytes: the name of the Merger the tree's
//	                          merge operands are meant for; in the
//	                          snapshot record once recorded, and in the
//	                          edit that first records it (absent: none
//	                          recorded, as in manifests written before it)
//	tag 65 instance id        bytes: the name of the instance that writes
//	                          the tree, in the names of the objects it
//	                          shares; carried as the merger name is
//	tag 66 format version     uvarint: the database format version of the
//	                          build that wrote the manifest (FormatVersion);
//	                          the first field of every snapshot record.
//	                          Absent: a manifest of before versions were
//	                          recorded, read as version 1. Newer than this
//	                          build's: the manifest is refused with an
//	                          error matching base.ErrNewerFormat (a newer
//	                          Strata wrote the database), whatever follows
//
// Invariants (checked when a version is built; with the invariants build tag
// also after every install):
//
//   - L0 files are ordered by sequence number, oldest first; their key ranges
//     may overlap.
//   - Files in L1..L6 are ordered by key and do not overlap within a level.
//   - For any user key, entries in a lower-numbered level are newer than
//     entries in a higher-numbered level.
package manifest
