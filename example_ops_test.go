package strata_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
)

// Examples of the operations around a database: checkpoints, local and in
// a store, restores, read-only opens, a compaction filter, Sync, and
// opening a checkpoint where it is. Each runs on an in-memory filesystem;
// drop the FS option to use the disk.

// set writes key=value pairs, failing the example on an error.
func set(db *strata.DB, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := db.Set([]byte(kv[i]), []byte(kv[i+1]), strata.NoSync); err != nil {
			log.Fatal(err)
		}
	}
}

// printAll prints every key and value of db.
func printAll(db *strata.DB) {
	it, err := db.NewIter(nil)
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("  %s=%s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
}

// A local checkpoint: hard links and a fresh manifest, a directory that
// Open takes as it is, unchanged by later writes to the database.
func ExampleDB_Checkpoint() {
	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	set(db, "a", "1", "b", "2")
	if err := db.Checkpoint("db-ckpt"); err != nil {
		log.Fatal(err)
	}
	set(db, "b", "changed after the checkpoint")

	ckpt, err := strata.Open("db-ckpt", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer ckpt.Close()
	fmt.Println("checkpoint:")
	printAll(ckpt)
	// Output:
	// checkpoint:
	//   a=1
	//   b=2
}

// An incremental checkpoint into a store (here a local one; S3 with
// checkpoint.NewS3Store), restored elsewhere in full.
func ExampleDB_CheckpointToStore() {
	fs := vfs.NewMem()
	ctx := context.Background()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	if err != nil {
		log.Fatal(err)
	}
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 3})
	if err != nil {
		log.Fatal(err)
	}
	set(db, "user:1", "alice", "user:2", "bob")
	st, err := db.CheckpointToStore(ctx, u) // uploads only what the store lacks
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checkpoint %d: %d files\n", st.ID, st.Files)

	if err := strata.RestoreFromStore(ctx, store, st.ID, "restored", &strata.Options{FS: fs}); err != nil {
		log.Fatal(err)
	}
	restored, err := strata.Open("restored", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	printAll(restored)
	// Output:
	// checkpoint 1: 1 files
	//   user:1=alice
	//   user:2=bob
}

// A key range of a checkpoint restored on its own, as a rescaled instance
// of a stream processor takes over its part of the key space.
func ExampleRestoreRangeFromStore() {
	fs := vfs.NewMem()
	ctx := context.Background()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	if err != nil {
		log.Fatal(err)
	}
	u, err := checkpoint.NewUploader(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	set(db, "k1", "a", "k2", "b", "k3", "c", "k4", "d")
	st, err := db.CheckpointToStore(ctx, u)
	if err != nil {
		log.Fatal(err)
	}

	// Keys in [k2, k4), arguments in the order of every function of a
	// store: ctx, store, id, start, end, dir, options.
	if err := strata.RestoreRangeFromStore(ctx, store, st.ID, []byte("k2"), []byte("k4"), "part", &strata.Options{FS: fs}); err != nil {
		log.Fatal(err)
	}
	part, err := strata.Open("part", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer part.Close()
	printAll(part)
	// Output:
	//   k2=b
	//   k3=c
}

// A read-only open takes no lock, so it can read a database another DB
// has open, as of the moment it opens; every write is refused.
func ExampleOptions_readOnly() {
	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	set(db, "a", "1")
	if err := db.Sync(); err != nil {
		log.Fatal(err)
	}

	ro, err := strata.Open("db", &strata.Options{FS: fs, ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	v, err := ro.Get([]byte("a"))
	fmt.Printf("a=%s %v\n", v, err)
	err = ro.Set([]byte("b"), []byte("2"), strata.Sync)
	fmt.Println("write refused:", errors.Is(err, strata.ErrReadOnly))
	// Output:
	// a=1 <nil>
	// write refused: true
}

// A compaction filter deletes keys by a rule of its own as flushes and
// compactions meet them, here every session: key, without reading values
// that live in value logs.
func ExampleOptions_compactionFilter() {
	db, err := strata.Open("db", &strata.Options{
		FS: vfs.NewMem(),
		CompactionFilter: func(key, value []byte, separated bool) bool {
			return bytes.HasPrefix(key, []byte("session:"))
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	set(db, "session:1", "expired state", "user:1", "alice")
	if err := db.Flush(); err != nil { // the filter runs in the flush
		log.Fatal(err)
	}
	printAll(db)
	// Output:
	//   user:1=alice
}

// Writes without Sync, then one Sync for all of them, as a stream
// processor commits its input offsets after its state writes. A crash
// after Sync returns keeps every write made before it.
func ExampleDB_Sync() {
	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		set(db, fmt.Sprint("count:", i), fmt.Sprint(i*10))
	}
	if err := db.Sync(); err != nil {
		log.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashOptions{}) // a power loss: only synced bytes survive
	db.Close()

	after, err := strata.Open("db", &strata.Options{FS: crashed})
	if err != nil {
		log.Fatal(err)
	}
	defer after.Close()
	printAll(after)
	// Output:
	//   count:0=0
	//   count:1=10
	//   count:2=20
}

// A checkpoint opened where it is, in the store, without downloading its
// files first: a failover or a rescale starts serving at once, reading
// what it needs from the store through a local cache.
func ExampleOpenFromStore() {
	fs := vfs.NewMem()
	ctx := context.Background()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	if err != nil {
		log.Fatal(err)
	}
	db, err := strata.Open("db", &strata.Options{FS: fs, SharedStore: store})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	u, err := checkpoint.NewUploader(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	set(db, "a", "1", "b", "2")
	st, err := db.CheckpointToStore(ctx, u)
	if err != nil {
		log.Fatal(err)
	}

	// Elsewhere, after a failover:
	db2, err := strata.OpenFromStore(ctx, store, st.ID, "db2", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db2.Close()
	set(db2, "c", "3") // new writes are the new instance's own
	printAll(db2)
	// Output:
	//   a=1
	//   b=2
	//   c=3
}
