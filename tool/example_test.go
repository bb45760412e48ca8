package tool_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/tool"
	"github.com/strata-db/strata/vfs"
)

// A program that embeds the engine mounts the tool's commands, here as
// "mydb db ...": StressArgs tells crashtest how to start stress again.
func Example_embed() {
	dir, _ := os.MkdirTemp("", "strata-example")
	defer os.RemoveAll(dir)
	db, _ := strata.Open(dir, nil)
	db.Set([]byte("greeting"), []byte("hello"), strata.Sync)
	db.Close()

	t := tool.New()
	t.StressArgs = []string{"mydb", "db"}
	t.Stdout = io.Discard
	fmt.Println("check:", t.Run([]string{"check", dir}))
	t.Stdout = os.Stdout
	t.Run([]string{"get", dir, "greeting"})
	// Output:
	// check: 0
	// hello
}

// The table reader takes only public types: the file number is
// sstable.FileNum.
func Example_tableReader() {
	dir, _ := os.MkdirTemp("", "strata-example")
	defer os.RemoveAll(dir)
	db, _ := strata.Open(dir, nil)
	db.Set([]byte("a"), []byte("1"), strata.Sync)
	db.Flush()
	db.Close()

	names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	f, _ := vfs.Default.Open(names[0])
	st, _ := f.Stat()
	var num uint64
	fmt.Sscanf(filepath.Base(names[0]), "%d.sst", &num)
	r, err := sstable.NewReader(f, st.Size(), sstable.ReaderOptions{FileNum: sstable.FileNum(num)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s (%s)\n", it.Key().UserKey, it.Value(), it.Key().Kind())
	}
	it.Close()
	// Output:
	// a = 1 (SET)
}
