// Package vlog implements value-log files: the append-only files that hold
// the values the tree separates out of its entries. It provides the file
// format, the Writer that builds a file at flush (or compaction) time, the
// Reader that resolves value pointers (with the value cache and read-ahead
// for scans), a Scanner over a file's records, the Pointer and its
// encoding, and the separation Policy that decides which values leave the
// tree.
//
// It also holds the code that writes and resolves value logs for the DB:
// the Separator that a flush or a compaction writes values through (it
// starts, rolls, finishes and, on failure, removes value logs), the
// ReaderCache that keeps Readers open in the DB's file cache and resolves
// pointers, and the RefsBlock that records in each table what it points to
// in which value log.
//
// It does not own file lifetimes or garbage accounting: the DB records
// which files exist in the manifest, with each table's references, and
// deletes a file once no version, snapshot, iterator or checkpoint can
// read it; the manifest's versions sum the references into each value
// log's live bytes, and the gc package decides from them.
//
// # File layout
//
//	+------------------------+ offset 0
//	| header (28 bytes)      |
//	+------------------------+ offset 28: the first record
//	| record 0               |  in the order the Writer was given them (the
//	| record 1               |  DB adds them in key order at flush, so a
//	| ...                    |  forward scan of the tree reads a file
//	+------------------------+  mostly front to back)
//	| footer (44 bytes)      |  written by Writer.Finish; absent when the
//	+------------------------+  writer crashed or aborted
//
// All integers are little-endian; all checksums are CRC-32C (Castagnoli).
//
// Header:
//
//	+----------+---------+---------+----------+----------+
//	| magic    | version | flags   | file num | checksum |
//	| 8 bytes  | u32     | u32 = 0 | u64      | u32      |
//	+----------+---------+---------+----------+----------+
//	 0          8         12        16         24         28
//
//	magic    = "\x89SVLOG\r\n"
//	version  = 1; a reader refuses a newer version, or any set flag, as a
//	           file written by a newer Strata (base.ErrNewerFormat)
//	file num = the number the file was created under; a reader checks it
//	checksum = CRC-32C(header[0:24])
//
// Record:
//
//	+----------+------------------+--------------------+-----+-------+
//	| checksum | key len          | value len          | key | value |
//	| u32      | uvarint          | uvarint            |     |       |
//	+----------+------------------+--------------------+-----+-------+
//
//	checksum = CRC-32C(every byte of the record after it)
//
// A record with an empty key and value takes 6 bytes; a record's total
// length is at most MaxRecordLen (2^32-1), since a pointer holds it in 32
// bits. The key is the user key of the entry whose value the record holds:
// a reader checks it against the key it expected, which catches a pointer
// into the wrong place, and GC needs it to find the entry that points to a
// record.
//
// Footer:
//
//	+---------+-------------+-------------+----------+----------+---------+
//	| count   | value bytes | records end | file num | checksum | magic   |
//	| u64     | u64         | u64         | u64      | u32      | 8 bytes |
//	+---------+-------------+-------------+----------+----------+---------+
//	 0         8             16            24         32         36        44
//
//	count       = number of records
//	value bytes = sum of the records' value lengths
//	records end = offset of the footer itself (file size - 44)
//	checksum    = CRC-32C(footer[0:32])
//	magic       = "\x89SVEND\r\n"
//
// A file is finished when its last 44 bytes are a footer whose magic and
// checksum verify, that names the file, whose records end is its own
// offset and whose totals are possible for the records' size. Anything
// else at the end makes the file unfinished, not corrupt: every record
// carries its own checksum, so records of an unfinished file are still
// read by pointer, and a Scanner reads them up to the first that does not
// verify. Of the file's bytes, only a bad header makes NewReader fail (as
// do I/O errors and a file shorter than the size it is given).
//
// # Value pointers
//
// The tree keeps, for a separated value, the encoded Pointer (file,
// record offset, record length, value length):
//
//	+------------------+------------------+-------------------+--------------------------+
//	| file num         | offset           | value len         | length - value len       |
//	| uvarint (u64)    | uvarint (u64)    | uvarint (< 2^32)  | uvarint (< 2^32)         |
//	+------------------+------------------+-------------------+--------------------------+
//
// The last field is the record's overhead (checksum, lengths and key), so
// a pointer to a 4 KiB value in a file under 256 MiB takes 8 or 9 bytes
// and never more than MaxPointerLen (30). Every field is a shortest-form
// uvarint; DecodePointer refuses anything else, trailing bytes, an offset
// inside the header and a length too short for the value.
//
// # Durability
//
// Pointers from Writer.Add are not durable until Finish returns nil:
// Finish writes the footer, syncs and closes the file. The DB syncs the
// directory entry and only then installs a version edit that refers to the
// file (invariant 2), so the tree never points into an unfinished file.
//
// # Reads
//
// Reader.Get reads the record a pointer names with one ReadAt, verifies
// its checksum, its lengths against the pointer and its key against the
// one expected, and returns the value. With a value cache the record is
// cached whole under (cache ID, file number, record offset), so a hit
// skips the checksum but still checks lengths and key. A ReadAhead serves
// a scan: while pointers keep moving the same way through the file it
// reads windows growing from 64 KiB to a maximum and serves the following
// records from them (see ReadAhead).
//
// A finished file, which nothing writes again, may instead be read through
// a read-only memory mapping (ReaderOptions.Map; the DB's ReaderCache maps
// every finished value log on the OS's filesystem). A read then loads one
// byte of every cache line of the record, copies the value once, into the
// caller's slice, and verifies the record (checksum over the front in the
// mapping and the value in the copy, lengths, key): a record not in the
// CPU cache comes in from memory faster through independent loads than
// through a copy, and faster through a copy than through the checksum
// loop. There is no system call, and no value cache (a cached copy would
// cost as much as the mapped one). Values never alias the mapping, so they
// stay valid after the file is closed. If the file shrinks under the
// mapping (truncated by someone else), the read faults; the fault is
// caught and reported as corruption of the file at the record's offset,
// never a crash. The value log the commit pipeline appends to
// (LiveWriter) is mapped too, with a window of the size at which it rolls
// over (LiveWriter.Map): a record the writer has written whole inside the
// window is read through the mapping like a finished file's, the rest
// from the writer's buffers or with ReadAt; the newest values are the
// ones read most, and a pread of each cost a system call (in kvbench
// ycsb-e without a prior fill, where every scan reads them, the reads
// went from 0.7x to 1.25x Badger's rate). Other unfinished files, and
// files of the in-memory and fault-injecting filesystems, are read with
// ReadAt.
//
// A scan knows the record it reads next (Reader.Ahead locates it in a
// mapping) and reads the current one with AppendValueAhead or
// MappedValueAhead, which prefetch a share of the next record as they
// copy and checksum this one (crc32c.CopyUpdate and UpdateAhead): its
// loads then overlap this record's checksum instead of stalling the next
// read, and, spread out, they do not fill the processor's miss buffers at
// once.
//
// The Writer writes 2 MiB pieces at 2 MiB-aligned offsets, which
// filesystems with large folios (ext4, xfs) cache as huge pages; the
// mapping of a finished file then maps them whole, so reads of values at
// random places in it cost few TLB misses and almost no page faults.
//
// # Errors
//
// Every decode is bounds-checked before any allocation the bytes could
// size. Bytes that fail a checksum or do not decode, and pointers that do
// not match the record they reach or reach outside the records, produce a
// base.CorruptionError (errors.Is(err, base.ErrCorruption)) that names the
// file and the offset: of the record, of the footer when a scan's totals
// disagree with it, or 0 for the header. I/O errors are wrapped with %w.
//
// # Separation policy
//
// A Policy decides, per value at flush time, whether it leaves the tree.
// Threshold (the DB's default) separates values of at least a fixed size.
// A policy that also implements Observer is told about writes, point
// reads, scans and garbage; AdaptiveThreshold shows how such a policy can
// move its threshold with the workload (its documentation gives the rule).
package vlog
