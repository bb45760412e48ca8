// Package sstable implements the block-based table format of the LSM tree:
// the Writer that builds a table from sorted entries, the Reader that opens
// one, point lookups (Get) and iterators (base.InternalIterator), the
// whole-table Bloom filter, properties, the meta-block index through which
// later features store their own blocks, per-block compression and
// checksums.
//
// It owns the bytes of one table file. It does not own file naming or
// lifetimes (the manifest and DB do), the block cache (package cache plugs
// in through the Cache interface), or the meaning of values (a
// KindValuePointer value is opaque here).
//
// # File layout
//
//	+------------------------+ offset 0
//	| data block 0 + trailer |  entries sorted by internal key
//	| data block 1 + trailer |
//	| ...                    |
//	+------------------------+
//	| extra meta blocks      |  Writer.AddMetaBlock and "strata.index.learned"
//	|                        |  (with WriterOptions.Learned), in name order
//	| filter block           |  "strata.filter.bloom" (absent when BitsPerKey < 0)
//	| range-del block        |  "strata.rangedel"     (absent without tombstones)
//	| index block            |  one entry per data block
//	| properties block       |  "strata.properties"
//	| meta-index block       |  name -> handle of every meta block
//	+------------------------+
//	| footer (56 bytes)      |  meta-index handle, index handle, version,
//	+------------------------+  checksum, magic
//
// Every block is followed by a 5-byte trailer, so every byte of the file is
// covered by a checksum (the footer carries its own):
//
//	+--------------------------+-----------+-----------------------------+
//	| block (maybe compressed) | type (1B) | checksum (4B LE)            |
//	+--------------------------+-----------+-----------------------------+
//	checksum = low 32 bits of xxhash64(block bytes || type byte)
//	type     = 0 none, 1 snappy, 2 s2, 3 zstd (see Compression)
//
// A zstd block is uvarint(decoded length) followed by one zstd frame;
// snappy and s2 blocks carry their decoded length in their own header. A
// block is stored raw when its codec saves less than 12.5%. A block handle
// is uvarint(offset) uvarint(length), the length excluding the trailer.
//
// # Blocks
//
// All blocks share one format (see block_writer.go): prefix-compressed
// entries (shared length, unshared length, value length as uvarints, key
// suffix, value) with a restart point every BlockRestartInterval entries
// (default 16; 1 for the index, properties and meta-index blocks), then the
// restart offsets as uint32 LE and their count.
//
//   - Data blocks map encoded internal keys (user key + 8-byte LE trailer
//     seq<<8|kind, see internal/base) of point kinds to values. Since
//     format version 2 the point kinds include SETM and VPTRM, whose values
//     start with entry metadata (base.EntryMeta: an expiry); a version 1
//     table holds none, and a reader of version 2 reads both.
//   - The index block maps, for each data block, a separator key s with
//     last key of the block <= s < first key of the next block (internal-key
//     order) to the block's handle. Separators are shortened user keys
//     (base.Separator; base.Successor after the last block) carrying the
//     trailer SeqNumMax,KindMax; when the user key cannot be shortened the
//     block's last key itself is used. The index is single-level: a 64 MiB
//     table of 4 KiB blocks has about 16k entries, decoded at open into a
//     flat array that Get and SeekGE binary-search.
//   - The range-del block maps start#seq,RANGEDEL to the exclusive end key.
//   - The properties block maps property names to values (properties.go).
//   - The meta-index block maps meta block names to handles (meta.go).
//   - The filter block is a cache-line-blocked Bloom filter over distinct
//     user keys (filter.go).
//   - The learned-index block (learned.go) holds a model from user key to
//     the position of the key's first entry among the table's point
//     entries (package learned), the entry count of every data block and
//     the restart interval; or, when the writer refused a model, the
//     reason. Tables written before it existed, or without it, have no
//     such block and are read as before.
//
// # Point lookups
//
// Get first asks the filter. Then, with a learned index, the model gives a
// window [lo, hi] of positions that holds the key's first entry if the key
// is in the table; the block counts map lo and hi to data blocks (usually
// one; across a block boundary, the index separator between them picks
// the block), and the restart interval maps the window to one or two
// restart intervals of that block, which are all the block search
// touches. The reader keeps each block's first position and file offset
// side by side, so the block cache is asked without reading the index.
// The block counts also give the block's restart count and, scaled by the
// block's size, roughly where the window's entries lie, so the lookup
// loads the block's restart array and those cache lines at once rather
// than one after another (a block in the block cache is usually not in
// the CPU's caches: these misses are most of a lookup). A key the model
// places outside the table is absent without a block read. Without a model, Get binary-searches the flattened index and
// then the block's restart points:
//
//	key --filter--> model --> [lo, hi] --block counts--> block b, restarts j..j'
//	                                                      (decode from restart j)
//	key --filter--> index binary search --> block b --> restart binary search
//
// A Get that must step past the window (entries of the key newer than the
// snapshot) continues to the end of the block and into the next, as the
// binary path does, so the answer never depends on the window.
//
// In a mapped table with a model, whose data blocks carry a checksum of
// each restart interval (format version 3, see block_writer.go), Get reads
// an uncompressed block in place: it verifies the interval its scan
// starts in, and each one the scan enters, instead of copying the block
// into the block cache and checksumming all of it; anything unexpected
// sends it down the ordinary path (inplace.go).
//
// The footer layout is in format.go.
//
// # Reading
//
// A Reader reads blocks with ReadAt, or, with ReaderOptions.Map, copies
// them from a read-only mapping of the file (no system call per block;
// the file is immutable). Either way a block is verified before use and
// the block cache gets a copy it owns, never the mapping. Point lookups
// read in place (above) are the exception: they verify the intervals they
// read and may return a value that aliases the mapping. A fault from a
// file truncated under its mapping is caught and reported as corruption.
//
// # Errors
//
// Every decode path is bounds-checked. Bytes that fail a checksum or do not
// decode produce a base.CorruptionError (errors.Is(err, base.ErrCorruption))
// naming the file and the offset of the block or footer; I/O errors are
// wrapped with %w.
package sstable
