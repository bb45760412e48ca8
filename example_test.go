package strata_test

import (
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

func Example() {
	// An in-memory filesystem keeps the example self-contained; omit FS to
	// use the disk.
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Set([]byte("fruit:apple"), []byte("red"), strata.Sync); err != nil {
		log.Fatal(err)
	}
	b := db.NewBatch()
	b.Set([]byte("fruit:banana"), []byte("yellow"))
	b.Set([]byte("fruit:cherry"), []byte("dark red"))
	b.Set([]byte("veg:kale"), []byte("green"))
	if err := db.Apply(b, strata.NoSync); err != nil {
		log.Fatal(err)
	}

	v, err := db.Get([]byte("fruit:banana"))
	fmt.Printf("banana: %s %v\n", v, err)

	_, err = db.Get([]byte("fruit:durian"))
	fmt.Println("durian found:", !errors.Is(err, strata.ErrNotFound))

	it, err := db.NewIter(&strata.IterOptions{LowerBound: []byte("fruit:"), UpperBound: []byte("fruit;")})
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Printf("%s=%s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// banana: yellow <nil>
	// durian found: false
	// fruit:cherry=dark red
	// fruit:banana=yellow
	// fruit:apple=red
}

func ExampleDB_NewSnapshot() {
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.Set([]byte("balance"), []byte("100"), strata.NoSync)
	snap := db.NewSnapshot()
	defer snap.Close()
	db.Set([]byte("balance"), []byte("40"), strata.NoSync)

	then, _ := snap.Get([]byte("balance"))
	now, _ := db.Get([]byte("balance"))
	fmt.Printf("then %s, now %s\n", then, now)
	// Output: then 100, now 40
}

// List state: appends never read the list; a read merges them.
func ExampleDB_Merge() {
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem(), Merger: strata.ListAppend})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for _, event := range []string{"click", "scroll", "buy"} {
		if err := db.Merge([]byte("session:42"), strata.ListElement(nil, []byte(event)), strata.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	v, err := db.Get([]byte("session:42"))
	if err != nil {
		log.Fatal(err)
	}
	events, err := strata.DecodeList(v)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range events {
		fmt.Println(string(e))
	}
	// Output:
	// click
	// scroll
	// buy
}

// A write with a time to live disappears when it expires; the clock is
// replaceable, here to let an hour pass at once.
func ExampleDB_SetWithTTL() {
	var now atomic.Int64 // the DB's background work reads the clock too
	now.Store(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem(), Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.SetWithTTL([]byte("dedup:order-17"), []byte("seen"), time.Hour, strata.NoSync); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("dedup:order-17"))
	fmt.Println("before:", err == nil)
	now.Add(int64(time.Hour))
	_, err = db.Get([]byte("dedup:order-17"))
	fmt.Println("after an hour:", errors.Is(err, strata.ErrNotFound))
	// Output:
	// before: true
	// after an hour: true
}
