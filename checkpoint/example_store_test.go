package checkpoint_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
)

// An incremental checkpoint into a local store, restored into a new
// directory.
func ExampleUploader() {
	tmp, err := os.MkdirTemp("", "strata-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()

	db, err := strata.Open(filepath.Join(tmp, "db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := checkpoint.NewLocalStore(filepath.Join(tmp, "store"))
	if err != nil {
		log.Fatal(err)
	}
	u, err := checkpoint.NewUploader(store, &checkpoint.UploadOptions{KeepLast: 2})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if err := db.Set([]byte(fmt.Sprintf("key-%d", i)), []byte("value"), strata.NoSync); err != nil {
			log.Fatal(err)
		}
		st, err := db.CheckpointToStore(ctx, u)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("checkpoint %d: %d files, %d uploaded, %d retained\n", st.ID, st.Files, st.UploadedFiles-1, st.Retained)
	}

	dir := filepath.Join(tmp, "restored")
	if err := checkpoint.Restore(ctx, store, 3, nil, dir, nil); err != nil {
		log.Fatal(err)
	}
	restored, err := strata.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer restored.Close()
	v, err := restored.Get([]byte("key-2"))
	fmt.Printf("key-2 = %s, %v\n", v, err)
	// Output:
	// checkpoint 1: 1 files, 1 uploaded, 1 retained
	// checkpoint 2: 2 files, 1 uploaded, 2 retained
	// checkpoint 3: 3 files, 1 uploaded, 2 retained
	// key-2 = value, <nil>
}
