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
// leaves the other intact. Incremental checkpoints into an object store
// (below) build on the same pinned-version file lists.
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
//
// # Incremental checkpoints into a Store
//
// A Store is an object store: put (atomic), ranged get, list and delete
// of named objects. LocalStore keeps objects as files of a directory
// (written to a temporary file, synced, renamed into place, the directory
// synced); NewS3Store speaks the S3 protocol (Signature Version 4,
// path-style addressing) with the standard library alone, so that the
// engine's module needs no SDK. The S3 store retries transient failures
// as the AWS SDKs' standard mode does (S3Options.MaxAttempts), abandons
// an attempt that stalls (S3Options.RequestTimeout), checks that a
// ranged read gets exactly its range, and resumes a read whose body
// fails part way from where it stopped. Object names
// are '/'-separated parts of letters, digits, '.', '_' and '-', never
// beginning with '.', so no name reaches outside the store (ValidName).
// NewSlowStore wraps any store to answer as one across a network does: a
// latency per request and a bandwidth shared by all, counting requests
// and bytes, so that work against a store is measured as S3 would serve
// it (10-100 ms a request), not at the speed of a local disk.
//
// strata's DB.CheckpointToStore pins the current version and hands it to
// an Uploader, which writes into its store:
//
//	registry                   the reference-counted registry (below),
//	                           with each retained checkpoint's Manifest:
//	                           its files, each with size, XXH64 and
//	                           handle (object, offset), and a strata
//	                           manifest of its version (MANIFEST bytes,
//	                           number, last sequence number, next file
//	                           number)
//	data/<id>-<n>-<random>     a data object made by checkpoint <id>: one
//	                           file (SmallFileSize or larger), or a
//	                           segment: small files back to back, each a
//	                           piece (offset, length)
//	registries/<name>          the registry called name (Named), and its
//	data/<name>/<id>-<n>-<r>   data objects
//
// A store holds one default registry and any number of named ones: the
// view Named(store, name) means registry name, for Uploaders and every
// function that reads a registry. Database instances that checkpoint into
// one store (a stream processor's parallel instances) give each its own
// name: each registry is replaced by its own uploads only, so they run
// side by side; it retains its own KeepLast checkpoints, numbered from 1;
// and since each registry holds its objects by markers of its own (holder
// "registry-<name>", package remote), one registry's retention never
// deletes what another's checkpoints or an instance opened from them use.
// Audit checks every registry of the store. Uploader.Retire empties the
// registry of an instance that is gone (after a rescale), without taking
// a checkpoint.
//
// Reference writes a database that is one checkpoint by reference (no
// file downloaded; strata.OpenFromStore), ReferenceRange one that is the
// union of several checkpoints, of one store's registries, restricted to
// a key range (strata.OpenRangeFromStore): tables that straddle the range
// are kept virtual (manifest.FileMetadata.Virtual), tables renumbered,
// value logs kept under their numbers, which value pointers name; the
// checkpoints may not overlap in the range, nor hold two different value
// logs under one number.
//
// The registry is sealed JSON: the JSON text, "\n", and
// "xxhash64:<16 hex digits>\n", the XXH64 of the text; a mismatch is an
// error matching strata.ErrCorruption. It holds the next checkpoint id,
// the retained checkpoints (id, manifest, the pieces each uses), and per data object its size, whether it is a segment, and
// its pieces: file name, size, XXH64, offset and Refs, the number of
// retained checkpoints that use the piece. Loading it checks that Refs
// agree with the checkpoints' lists and that every object is used.
//
// An upload:
//
//  1. reads the registry (none: an empty store);
//  2. drops the oldest checkpoints beyond KeepLast from its copy,
//     decrementing their pieces' Refs;
//  3. finds each file of the version among the pieces by name and size,
//     then XXH64 (the Uploader caches checksums of files it has read);
//  4. chooses segments to empty: those whose live share (bytes of pieces
//     with Refs > 0 over the segment's size) is below MinLiveRatio, the
//     sparsest first, up to ReuploadBytes of live pieces (at least one
//     segment), and the small value-log segments (below SegmentSize/2)
//     of which the checkpoint uses MergeSmallSegments or more of one size
//     tier (sizes within a factor of 4);
//  5. uploads, in parallel, the files not found and every live piece of
//     the segments to empty, packed into segments by lifetime (L0/L1
//     tables, deeper tables, value logs; a group with less than an eighth
//     of a segment to upload joins the largest), files of SmallFileSize
//     or more as objects of their own, computing XXH64s on the way. The
//     pieces the checkpoint uses are read from the database's files; the
//     ones only older checkpoints use (files deleted since) are copied
//     from the store, checked against their XXH64, into segments of their
//     own that die with those checkpoints. Into a store that is a
//     Composer (LocalStore, S3Store), an object holding moved pieces is
//     composed instead: the store copies the pieces from their old objects
//     (S3: UploadPartCopy of each run of adjacent live pieces of 5 MiB or
//     more; shorter runs are read back and sent) and only the new files
//     are uploaded. Every retained checkpoint that
//     used a moved piece is pointed at its new place in the registry, so
//     the emptied segment is deleted by this upload: nothing is stored
//     twice;
//  6. replaces the registry, which now holds the checkpoint's manifest:
//     that Put is the commit, and the only object an upload writes
//     besides data;
//  7. deletes objects no piece of which is used, and any object under
//     data/ or checkpoints/ the registry does not name (what failed
//     uploads left).
//
// Stores written with registry format 1 kept each manifest in an object
// checkpoints/<id, 20 digits>; they are read as they are, and an upload
// into one writes format 2 and deletes those manifests as their
// checkpoints are dropped.
//
// A failure before the commit deletes what the upload wrote, so the store
// is as it was; a failure in step 7 is counted in Stats.CleanupErrors and
// the next upload retries it. Since pieces move, the registry, not a
// checkpoint's manifest, says where its files are now: ReadManifest and
// Restore look each file up in the registry (a manifest keeps the handles
// of its upload), and a restore that finds an object gone (moved by an
// upload meanwhile) looks again. One store takes uploads from one Uploader at
// a time. Stats report, after every upload, the bytes uploaded (new files
// and re-uploaded pieces apart), the store's bytes and object count, the
// distinct file bytes the retained checkpoints reference, and space
// amplification (stored / referenced).
//
// # Segment sizes: objects against bytes moved
//
// Fewer objects need larger segments, and a large segment, once its live
// share falls below MinLiveRatio, moves its live bytes, so the bytes
// moved per checkpoint grow with SegmentSize (into a Composer they are
// copied by the store, not uploaded); space amplification is
// bounded by MinLiveRatio (dead bytes wait in segments above it) and no
// longer by duplicates, since emptied segments are deleted at once. The
// defaults (segments of 1 GiB for every file below it, MinLiveRatio 0.75,
// merges of 2 small segments, ReuploadBytes one segment) were chosen on
// an overwrite workload (200,000 keys of 4 KiB, 100 checkpoints of
// 8,000 overwrites, 3.1 GiB written, value logs of 32 MiB: TestOverwriteFigures):
// space amplification at most 1.25, objects (the registry counted) at
// least 12x fewer than the tables and value logs the 3 retained
// checkpoints reference (15x in the median), and about 170 MiB moved per
// checkpoint for 31 MiB written and 53 MiB of files new to the store (the
// database's own garbage collection and compactions included). Into S3
// (a versitygw server) 54-55 MiB are uploaded per checkpoint, the moved
// pieces copied by the server all but 1.5 MiB; into a store that cannot
// compose, the moved bytes are uploaded too, about 220 MiB per
// checkpoint. For such a store,
// segments of 64 MiB with files of 16 MiB and more left alone upload
// about 80 MiB per checkpoint but keep 2x fewer objects than files;
// 256 MiB segments, about 140 MiB and 6x.
//
// Restore downloads a checkpoint's files in parallel into a temporary
// directory next to the destination, verifying each one's XXH64, writes
// the manifest and CURRENT, and renames the directory onto the
// destination (which must not exist or be empty). With a key range it
// fetches only the tables overlapping the range and the value logs they
// reference, and writes a manifest of only those; strata.RestoreRangeFromStore
// then clips the keys outside the range with range deletions before the
// rename. Package keygroup maps Flink-style key groups to such ranges.
//
// Audit (strata check --store) checks a store: the registry loads, every
// piece a retained checkpoint uses is in its object with its length and
// (unless Quick) its XXH64, every object in use carries the marker of
// each holder that uses it (package remote), given databases' shared
// files are there; it lists the markers no holder's state explains
// (stray: a crash leaves them, and their holders drop them) and the
// objects no one holds or names (unreferenced), and with Fix deletes
// those and writes missing markers, the repairs that are safe beside
// holders at work.
package checkpoint
