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
//	| chunk | chunk | ... | chunk | tail (< 15 bytes, zeros) | chunk | ...
//	+--------------------------------------------------------+-----------
//
//	chunk (types 5..8, the ones the Writer writes):
//	+------------+------------+---------+---------------+----------------+
//	| checksum   | length     | type    | synced offset | payload        |
//	| 4 bytes LE | 2 bytes LE | 1 byte  | 8 bytes LE    | length bytes   |
//	+------------+------------+---------+---------------+----------------+
//	 \__________________ header: 15 bytes __________________/
//
//	legacy chunk (types 1..4, written by earlier versions; still read):
//	+------------+------------+---------+---------------------+
//	| checksum   | length     | type    | payload             |
//	| 4 bytes LE | 2 bytes LE | 1 byte  | length bytes        |
//	+------------+------------+---------+---------------------+
//	 \___________ header: 7 bytes ________/
//
//	checksum = mask(CRC-32C(every byte after the length: type ++ synced
//	           offset (if any) ++ payload))
//	mask(c)  = ((c >> 15) | (c << 17)) + 0xa282ead8   (mod 2^32, as in LevelDB)
//
// The mask keeps the checksum of a payload that itself holds checksums from
// being trivially related to them. Chunk types:
//
//	0     invalid (an all-zero header is padding or preallocated space)
//	5 (1) FULL    the whole record
//	6 (2) FIRST   the first chunk of a record that spans blocks
//	7 (3) MIDDLE  an interior chunk of such a record
//	8 (4) LAST    its final chunk
//
// The legacy types are in parentheses. A record is either one FULL chunk or
// FIRST, zero or more MIDDLE, LAST. An empty record is a FULL chunk with
// length 0. When fewer bytes are left in a block than a header takes, the
// writer fills them with zeros and continues in the next block; when
// exactly a header's worth is left it writes a chunk with an empty payload
// there. After a chunk of types 5..8 a Reader therefore skips a block tail
// shorter than 15 bytes, whatever it holds; after a legacy chunk, a tail
// shorter than 7 (a legacy log has 7-byte empty chunks in 7-byte tails).
//
// The synced offset is the number of bytes at the start of the file that
// the Writer's last successful Sync had made durable when it wrote the
// chunk (0 before the first Sync): offsets count from the file's first
// byte, and it never exceeds the chunk's own offset. It is the same for
// every chunk of a record.
//
// # Torn tails and corruption
//
// A crash can damage what was written since the last sync, and a real disk
// does not always leave a neat prefix of it: the end of the log can be
// missing or cut inside a chunk, a file can keep its size while a page of
// it reads back as zeros (XFS does this for pages that never reached the
// disk), and later pages can reach the disk without earlier ones. The
// synced offsets tell such damage from corruption. A bad chunk at offset X
// (one that fails its checksum, has an invalid type, claims a length past
// the end of its block or file, or a record that stops short) is a torn
// tail, and Next returns io.EOF there, when every valid chunk after it
// (anywhere later in the file, later in the same block included) claims a
// synced offset at or below X: those bytes were never synced, so nothing
// written after them was either, and none of it was acknowledged as
// durable. When a valid chunk after it claims a synced offset past X, the
// bad chunk had been synced: Next returns an error matching
// base.ErrCorruption that names the file, the offset of the bad chunk, and
// the chunk and synced offset that show it. A valid legacy chunk after it,
// which carries no synced offset, makes it corruption too (the legacy rule
// below). A valid chunk out of sequence
// (a FULL or FIRST inside a record, a MIDDLE or LAST outside one), or one
// that claims a synced offset past its own offset, is corruption as well.
//
// To find the valid chunks after a bad one, the Reader looks for one at
// every byte offset (checksumming only candidates with a valid type and a
// length that fits their block); from a valid chunk it moves on to the end
// of that chunk. This runs only after a bad chunk.
//
// The rule needs a log written front to back into a file that starts empty,
// with every sync syncing the whole file. Its cost: a sync that no later
// chunk records (the last one before a Writer is closed) is invisible to a
// Reader, so damage after the last recorded synced offset reads as a torn
// tail even when it hit bytes that had been synced.
//
// A legacy log records no synced offsets, and keeps the rule it was read by
// before: a bad chunk is corruption if any valid chunk follows it, a torn
// tail if none does. That assumes a crash leaves a prefix of what was
// written; a crash that persisted later unsynced pages without earlier
// ones, a recycled file holding stale chunks past the live end, or a torn
// final chunk whose payload holds a well-formed chunk are reported as
// corruption rather than dropping the records after the damage silently.
//
// # Strict reading
//
// NewStrictReader reads logs whose every record is synced before anything
// depends on it (the manifest). In a legacy log it accepts only a
// truncation (the file ending inside its last chunk, or an all-zero
// header) as a torn tail: a complete chunk that fails its checksum is
// corruption wherever it is, since a torn append was taken to leave a
// prefix of what was written, not different bytes. A real disk breaks that
// assumption (the last, unsynced record can keep its length and lose a
// page to zeros), so in a log of chunks with synced offsets the strict
// reader decides a bad chunk by the rule above. Every valid chunk before a
// bad one claims a synced offset at or below its own offset, so the bad
// chunk lies past the synced offset claimed before it; it is corruption
// only when a valid chunk after it claims a synced offset past it. The
// consequence: a manifest's last record that fails its checksum, with
// nothing valid after it, is a torn tail and is dropped, because it cannot
// be told from an append that a crash interrupted before its sync (Pebble
// reads its manifest the same way). So a manifest whose last record the
// medium damaged after its sync opens at the version before that record,
// silently. A damaged record that a later record follows is corruption,
// since the later record was written after a sync that covered it.
package record
