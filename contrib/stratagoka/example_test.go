package stratagoka_test

import (
	"fmt"
	"log"
	"os"

	"github.com/strata-db/strata/contrib/stratagoka"
)

// A storage as goka drives it: built for a table partition, opened,
// recovered (a bulk load), marked recovered (durable at once), then read
// and iterated; reopened, it has kept its state and offset.
func ExampleNewBuilder() {
	dir, err := os.MkdirTemp("", "stratagoka-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// In a processor: goka.WithStorageBuilder(build).
	build := stratagoka.NewBuilder(dir, &stratagoka.Options{MemoryBudget: 64 << 20})

	st, err := build("clicks-table", 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Open(); err != nil {
		log.Fatal(err)
	}
	for i, user := range []string{"ann", "bob", "cy"} {
		if err := st.Set(user, []byte(fmt.Sprint(i+1))); err != nil {
			log.Fatal(err)
		}
		if err := st.SetOffset(int64(i)); err != nil {
			log.Fatal(err)
		}
	}
	if err := st.MarkRecovered(); err != nil {
		log.Fatal(err)
	}
	ok, _ := st.Has("bob")
	fmt.Println("has bob:", ok)
	it, err := st.Iterator()
	if err != nil {
		log.Fatal(err)
	}
	for it.Next() {
		v, _ := it.Value()
		fmt.Printf("%s=%s\n", it.Key(), v)
	}
	it.Release()
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}

	st, err = build("clicks-table", 0)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	off, _ := st.GetOffset(-1)
	v, _ := st.Get("cy")
	fmt.Printf("reopened: offset %d, cy=%s\n", off, v)
	// Output:
	// has bob: true
	// ann=1
	// bob=2
	// cy=3
	// reopened: offset 2, cy=3
}
