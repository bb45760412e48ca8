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
package checkpoint
