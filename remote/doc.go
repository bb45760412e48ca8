// Package remote is the home of a database's shared files: tables and
// value logs whose primary copy is an object in a Store (S3, or a local
// directory standing in for one), read through a local cache. It owns
// what a shared file is called in the store, who holds it there, when it
// may be deleted, and how its bytes reach a reader; the database (package
// strata) decides which files to share and records them in its manifest.
//
// # Objects and names
//
//	shared/<instance>/<NNNNNN>.sst    a table an instance shared
//	shared/<instance>/<NNNNNN>.vlog   a value log an instance shared
//	data/<id>-<n>-<random>            a checkpoint's data object (package
//	                                  checkpoint): one file or a segment
//	data/<name>/<id>-<n>-<random>     one of the registry called name
//	refs/<object>/<holder>            a reference marker (empty)
//	holds/<holder>                    a hold: the objects an instance
//	                                  opened from a checkpoint holds
//	                                  until it has marked them
//
// An instance id is 16 hex digits, new for every database instance (one
// opened from a checkpoint gets its own), recorded in the manifest; an
// instance writes objects only under its own name, so two instances never
// write the same object. A file is shared when the manifest says so
// (manifest.SharedRef): its bytes are the range [Offset, Offset+size) of
// an object, the whole object for a file an instance shared, a piece of a
// segment for a file a database opened from a checkpoint reads in place.
//
// # References and deletion
//
// A holder is an instance ("i-<instance>") or a store's checkpoint
// registry ("registry" for its default one, "registry-<name>" for a named
// one). Each holder of an object has a marker on it for
// as long as it may use the object; the object is deleted with its last
// marker. refs.go states the three rules that keep this safe against a
// crash between any two store requests (a marker before anything durable
// of the holder names the object; a holder that joins another's object
// checks, after its marker, that the other still holds it; a marker is
// dropped only after nothing durable of its holder names the object), and
// what a crash can leave: objects without markers (Sweep deletes them)
// and markers nobody's state explains (an instance drops its own at
// Open; a registry's upload drops its own; an OpenFromStore interrupted
// before its directory was in place leaves the markers of an instance
// that never opens, which no one drops). An instance holds an object by
// one marker however many of its files are in it (the pieces of a
// checkpoint's segment), and drops it with the last of them. An instance
// opened from a checkpoint first holds the checkpoint's objects by one
// hold, a single request where a marker each would be as many as there
// are objects, and turns it into markers in the background (holds.go);
// every deletion reads the holds after the markers. DropInstance drops
// every marker and the hold of an instance that is gone for good (its
// database destroyed), deleting what no other holder keeps.
//
// Instances share value logs by number (a table's value pointers name
// their value log's file number), so an instance that shares files
// allocates file numbers from a random base of its own
// (NewFileNumBase): a database that takes key ranges of several
// instances by reference holds the value logs of each.
// checkpoint.Audit (strata check --store) checks a store against these
// rules.
//
// # The local cache
//
// Files tracks the database's shared files. A whole local copy of a
// shared file is the directory's own file under its usual name (the copy
// the instance wrote before sharing it, or one Warm downloaded): readers
// open it as any local file, and may map it. Without one, a reader gets a
// File whose reads fetch the parts they touch (PartSize, 1 MiB) with
// ranged GETs, into Dir/shared-cache/<file>.<part>: written to a
// temporary file, synced and renamed, so a part is whole or absent after
// a crash, and kept across restarts. Readers of a cold part share one
// GET. Whole copies and parts share one LRU bound (CacheSize). The bytes
// of a shared file are verified by the file's own checksums (block and
// record checksums), as for a local file.
package remote
