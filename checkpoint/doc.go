// Package checkpoint writes consistent copies of a database that Open can
// use directly.
//
// A local checkpoint is a directory holding hard links to the immutable
// files of a pinned version (SSTables; value logs once values are
// separated) and a fresh manifest that describes exactly those files:
//
//	checkpoint-dir/
//	  000012.sst  -> hard link to db/000012.sst (copied when linking is
//	                 impossible)
//	  000015.sst  -> ...
//	  000013.vlog -> hard link to db/000013.vlog (every value log the
//	                 pinned version holds, so every pointer resolves)
//	  MANIFEST-NNNNNN  one record: a snapshot of the pinned version, its last
//	                   sequence number, and a log number past every WAL, so
//	                   the checkpoint has no WAL to replay
//	  CURRENT          "MANIFEST-NNNNNN\n"
//
// Because the files never change once written, a link costs no space until
// the database and the checkpoint diverge, and deleting either side's link
// leaves the other intact. Incremental checkpoints to remote storage and
// segment packing build on the same pinned-version file lists.
//
// # Writing a local checkpoint
//
// The destination must not exist or be an empty directory. WriteLocal never
// writes into it: a hard link into a directory that another writer shares
// would let that writer reach the live files of the database. Instead it
//
//  1. creates a new directory next to the destination, "<dst>.tmp-<random
//     hex>", with Mkdir, which fails if the name exists, so the directory
//     belongs to this call alone (missing parents of the destination are
//     created first, and made durable);
//  2. links each file into it, or copies it into a file made with
//     CreateExclusive and synced;
//  3. writes and syncs the manifest and CURRENT, and syncs the directory;
//  4. renames the directory onto the destination, and syncs the
//     destination's parent.
//
// The rename is atomic and, as rename(2), replaces the destination only if
// it is missing or an empty directory. Of several checkpoints into one
// destination, concurrent or not, exactly one succeeds; the others fail
// with an error saying the destination is not empty. A failed checkpoint
// removes its temporary directory and nothing else: never the destination
// nor anything it did not create. A crash part way can leave a
// "<dst>.tmp-*" directory; it is not part of any database and can be
// deleted.
//
// A file is copied instead of linked only when the filesystem cannot link
// it there: across devices (EXDEV), where links are not permitted or not
// supported (EPERM, ENOTSUP, EOPNOTSUPP), or when the file has as many
// links as allowed (EMLINK). Any other link error, EEXIST above all, fails
// the checkpoint, and a copy never replaces or truncates an existing name,
// which might be a hard link to a live file.
package checkpoint
