// Package record is the checksummed record log shared by the write-ahead log
// and the manifest: a Writer that appends records to a file and a Reader that
// returns them in order, telling a torn tail (a crash during an append) from
// real corruption.
//
// It owns the log's byte format and nothing above it: what a record means
// (a write batch, a version edit), which file it lives in, when to sync and
// when to start a new file are the callers' business.
//
// # Format
//
// A log is a sequence of 32 KiB blocks; the last block may be short. A record
// is cut into chunks, and no chunk crosses a block boundary:
//
//	+------------------- block 0 (32 KiB) -------------------+--- block 1 ...
//	| chunk | chunk | ... | chunk | tail (< 7 bytes, zeros)  | chunk | ...
//	+--------------------------------------------------------+-----------
//
//	chunk:
//	+------------+------------+---------+---------------------+
//	| checksum   | length     | type    | payload             |
//	| 4 bytes LE | 2 bytes LE | 1 byte  | length bytes        |
//	+------------+------------+---------+---------------------+
//	 \___________ header: 7 bytes ________/
//
//	checksum = mask(CRC-32C(type byte ++ payload))
//	mask(c)  = ((c >> 15) | (c << 17)) + 0xa282ead8   (mod 2^32, as in LevelDB)
//
// The mask keeps the checksum of a payload that itself holds checksums from
// being trivially related to them. Chunk types:
//
//	0  invalid (an all-zero header is padding or preallocated space)
//	1  FULL    the whole record
//	2  FIRST   the first chunk of a record that spans blocks
//	3  MIDDLE  an interior chunk of such a record
//	4  LAST    its final chunk
//
// A record is either one FULL chunk or FIRST, zero or more MIDDLE, LAST. When
// fewer than 7 bytes are left in a block, the writer fills them with zeros
// and continues in the next block; when exactly 7 are left it writes a chunk
// with an empty payload there. An empty record is a FULL chunk with length 0.
//
// # Torn tails and corruption
//
// A crash can leave the end of the log incomplete: a short last block, a
// chunk that fails its checksum, a record whose LAST chunk never arrived, or
// zeros from preallocation. The Reader reports all of these as io.EOF,
// provided nothing valid follows them. To decide that, it looks for a valid
// chunk at every byte offset after the bad chunk, later in the same block
// as well as in later blocks (checksumming only candidates with a valid type
// and a length that fits their block); if one verifies, the bad chunk was
// not the end of the log and Next returns an error matching
// base.ErrCorruption that names the file, the offset of the bad chunk and
// the offset of the valid chunk after it. A valid chunk out of sequence (a
// FULL or FIRST inside a record, a MIDDLE or LAST outside one) is corruption
// as well.
//
// The rule assumes that the log is written front to back into a file that
// starts empty and that a sync makes everything written before it durable:
// a crash then leaves a prefix of what was written (perhaps followed by
// zeros), and a torn chunk is the last thing in the file. A recycled file
// holding stale valid chunks past the live end would make a torn tail look
// like corruption, and so would a crash that persisted later unsynced pages
// without earlier ones, or a torn final chunk whose payload holds a
// well-formed chunk. Those are reported as corruption rather than dropping
// the records after the damage silently: a damaged chunk followed by valid
// ones may be losing writes that were acknowledged as synced.
package record
