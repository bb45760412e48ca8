package strata_test

import (
	"bytes"
	"log"
	"log/slog"
	"os"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

// A Logger shows what recovery did: here a power loss leaves two synced
// writes in the WAL, one of them with a value in a value log the manifest
// does not list yet.
func ExampleOptions_logger() {
	// A text handler without timestamps, so the output is the same each run.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))

	fs := vfs.NewMem()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Set([]byte("small"), []byte("v"), strata.Sync); err != nil {
		log.Fatal(err)
	}
	if err := db.Set([]byte("large"), bytes.Repeat([]byte("x"), 4096), strata.Sync); err != nil {
		log.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashOptions{}) // what a power loss leaves
	db.Close()

	db, err = strata.Open("db", &strata.Options{FS: crashed, Logger: logger})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Output:
	// level=INFO msg="strata: recovery adopted a value log the manifest did not list yet" file=000004.vlog bytes=4136 records=1 finished=false
	// level=INFO msg="strata: WAL replayed" wal=000003.log batches=2 bytes=76
}
