package strata_test

import (
	"encoding/json"
	"errors"
	"expvar"
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
	// The engine reads the clock from background work too: keep it safe
	// for concurrent use.
	var elapsed atomic.Int64
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem(), Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.SetWithTTL([]byte("dedup:order-17"), []byte("seen"), time.Hour, strata.NoSync); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("dedup:order-17"))
	fmt.Println("before:", err == nil)
	elapsed.Add(int64(time.Hour))
	_, err = db.Get([]byte("dedup:order-17"))
	fmt.Println("after an hour:", errors.Is(err, strata.ErrNotFound))
	// Output:
	// before: true
	// after an hour: true
}

// Expvar exports the metrics as a JSON variable, served by expvar's
// /debug/vars handler once published.
func ExampleDB_Expvar() {
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	expvar.Publish("strata", db.Expvar())

	if err := db.Set([]byte("k"), []byte("v"), strata.Sync); err != nil {
		log.Fatal(err)
	}
	var m struct {
		UserBytes uint64
		Latency   struct {
			Commit struct {
				Count uint64 `json:"count"`
			}
		}
	}
	if err := json.Unmarshal([]byte(expvar.Get("strata").String()), &m); err != nil {
		log.Fatal(err)
	}
	fmt.Println("user bytes:", m.UserBytes, "commits:", m.Latency.Commit.Count)
	// Output: user bytes: 2 commits: 1
}

func ExampleDB_Ingest() {
	fs := vfs.NewMem()
	db, err := strata.Open("ingest-db", &strata.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("user/2"), []byte("old"), strata.Sync); err != nil {
		log.Fatal(err)
	}

	// Build a table outside the DB, keys in increasing order; large values
	// go to its value log ("users.sst.vlog").
	w, err := strata.NewTableWriter("users.sst", &strata.TableWriterOptions{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := w.Set([]byte(fmt.Sprintf("user/%d", i)), []byte(fmt.Sprintf("profile %d", i))); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	// Ingest adds it atomically, newer than every earlier write.
	if err := db.Ingest([]string{"users.sst"}); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("user/2"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// Output: profile 2
}
