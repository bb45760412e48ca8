package vfs_test

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-db/strata/vfs"
)

func ExampleMemFS_CrashClone() {
	fs := vfs.NewMem()
	_ = fs.MkdirAll("db", 0o755)
	// A new directory's entry in its parent is durable once the parent is
	// synced, like a new file's.
	root, _ := fs.OpenDir("")
	_ = root.Sync()

	f, _ := fs.Create("db/log")
	_, _ = f.Write([]byte("synced;"))
	_ = f.Sync()
	_, _ = f.Write([]byte("not synced"))

	// Until the directory is synced, the file's creation is not durable.
	fmt.Println(fs.CrashClone(vfs.CrashOptions{}).List("db"))

	d, _ := fs.OpenDir("db")
	_ = d.Sync()
	crashed := fs.CrashClone(vfs.CrashOptions{})
	r, _ := crashed.Open("db/log")
	data, _ := io.ReadAll(r)
	fmt.Printf("%s\n", data)
	// Output:
	// [] <nil>
	// synced;
}

func ExampleOnIndex() {
	run := func(fs vfs.FS) error {
		f, err := fs.Create("f")
		if err != nil {
			return err
		}
		if _, err := f.Write([]byte("data")); err != nil {
			return err
		}
		return f.Sync()
	}

	// Count the operations, then fail each in turn.
	counter := vfs.OnIndex(-1)
	_ = run(vfs.NewErrorFS(vfs.NewMem(), counter))
	for i := range counter.Count() {
		err := run(vfs.NewErrorFS(vfs.NewMem(), vfs.OnIndex(i)))
		fmt.Println(errors.Is(err, vfs.ErrInjected), err)
	}
	// Output:
	// true vfs: injected error: create(f) (operation 0)
	// true vfs: injected error: write(f) (operation 1)
	// true vfs: injected error: sync(f) (operation 2)
}
