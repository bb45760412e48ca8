package sstable_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
)

func Example() {
	dir, err := os.MkdirTemp("", "sstable-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, base.MakeFilename(base.FileTypeTable, 1))

	// Write a table: points in internal-key order, tombstones in start
	// order, an extra meta block and a user property.
	f, err := vfs.Default.Create(name)
	if err != nil {
		log.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{Compression: sstable.S2Compression})
	for _, e := range []struct {
		key  string
		seq  base.SeqNum
		kind base.Kind
		val  string
	}{
		{"apple", 7, base.KindSet, "red"},
		{"apple", 3, base.KindSet, "green"},
		{"banana", 5, base.KindDelete, ""},
		{"cherry", 4, base.KindSet, "dark"},
	} {
		if err := w.Add(base.MakeInternalKey([]byte(e.key), e.seq, e.kind), []byte(e.val)); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.AddRangeDel([]byte("c"), []byte("d"), 9); err != nil {
		log.Fatal(err)
	}
	if err := w.AddMetaBlock("example.notes", []byte("hello")); err != nil {
		log.Fatal(err)
	}
	w.SetUserProperty("owner", "example")
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	md := w.Metadata()
	fmt.Println("bounds:", md.Smallest(), md.Largest())

	// Read it back.
	f, err = vfs.Default.Open(name)
	if err != nil {
		log.Fatal(err)
	}
	r, err := sstable.NewReader(f, int64(md.Size), sstable.ReaderOptions{FileNum: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	v, kind, seq, found, err := r.Get([]byte("apple"), 5)
	fmt.Println("get apple@5:", string(v), kind, seq, found, err)
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %q\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	notes, _, _ := r.MetaBlock("example.notes")
	fmt.Println("tombstones:", len(r.RangeTombstones()), "meta:", string(notes), "owner:", r.Properties().User["owner"])
	// Output:
	// bounds: "apple"#7,SET "d"#72057594037927935,RANGEDEL
	// get apple@5: green SET 3 true <nil>
	// "apple"#7,SET = "red"
	// "apple"#3,SET = "green"
	// "banana"#5,DEL = ""
	// "cherry"#4,SET = "dark"
	// tombstones: 1 meta: hello owner: example
}
