package record_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
)

func Example() {
	dir, err := os.MkdirTemp("", "record-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "000001.log")

	f, err := vfs.Default.Create(name)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := record.NewWriter(f)
	for _, rec := range []string{"first", "second", ""} {
		if _, err := w.WriteRecord([]byte(rec)); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Close(); err != nil { // flushes and syncs
		fmt.Println(err)
		return
	}

	f, err = vfs.Default.Open(name)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	r := record.NewReader(f, "000001.log")
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break // the clean end of the log, or a torn tail
		}
		if err != nil {
			fmt.Println(err) // matches base.ErrCorruption for bad bytes
			return
		}
		fmt.Printf("%q\n", rec)
	}
	fmt.Println("valid prefix ends at", r.Offset())
	// Output:
	// "first"
	// "second"
	// ""
	// valid prefix ends at 56
}
