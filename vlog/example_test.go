package vlog_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

func Example() {
	dir, err := os.MkdirTemp("", "vlog-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	const fileNum base.FileNum = 5
	name := filepath.Join(dir, base.MakeFilename(base.FileTypeVlog, fileNum))

	// Flush: values the policy separates go to the value log, in key
	// order; the tree keeps the encoded pointers.
	policy := vlog.Threshold(8)
	f, err := vfs.Default.Create(name)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := vlog.NewWriter(f, fileNum)
	tree := map[string][]byte{} // stands in for the SST
	for _, e := range []struct{ k, v string }{{"apple", "a long red value"}, {"fig", "small"}, {"kiwi", "a long green value"}} {
		if !policy.Separate([]byte(e.k), len(e.v)) {
			tree[e.k] = []byte(e.v)
			continue
		}
		p, err := w.Add([]byte(e.k), []byte(e.v))
		if err != nil {
			fmt.Println(err)
			return
		}
		tree[e.k] = p.Encode(nil)
	}
	if err := w.Finish(); err != nil { // footer, sync, close: now pointers may be made durable
		fmt.Println(err)
		return
	}

	// Read: resolve a pointer.
	f, err = vfs.Default.Open(name)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := f.Stat()
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := vlog.NewReader(f, fileNum, st.Size(), vlog.ReaderOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	p, err := vlog.DecodePointer(tree["kiwi"])
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := r.Get(p, []byte("kiwi"))
	if err != nil {
		fmt.Println(err) // matches base.ErrCorruption for bad bytes
		return
	}
	fmt.Printf("%s -> %q\n", p, v)

	// Scan the file in order.
	s := r.NewScanner()
	for s.Next() {
		fmt.Printf("%s %q\n", s.Key(), s.Value())
	}
	fmt.Println("finished:", r.Finished(), "error:", s.Err())
	// Output:
	// 000005.vlog:55+28 (value 18) -> "a long green value"
	// apple "a long red value"
	// kiwi "a long green value"
	// finished: true error: <nil>
}

func ExampleAdaptiveThreshold() {
	a := vlog.NewAdaptiveThreshold(vlog.AdaptiveOptions{})
	// A write-heavy phase: 4 KiB values, rarely read.
	for range 10000 {
		a.ObserveWrite(16, 4096)
	}
	fmt.Println("write-heavy:", a.Update())
	// The same values, now read 20 times per write: keeping them in the
	// tree costs less than the extra reads.
	for range 200000 {
		a.ObserveRead(4096, true)
	}
	fmt.Println("read-heavy:", a.Update())
	// Output:
	// write-heavy: 512
	// read-heavy: 5120
}
