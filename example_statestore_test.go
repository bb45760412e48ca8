package strata_test

import (
	"fmt"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/vfs"
)

// Many databases in one process (a state store's partitions) share one
// memtable budget and one block cache; a partition rebuilt from a
// changelog is loaded in bulk and made durable at once; Has answers
// without reading values.
func ExampleNewWriteBudget() {
	budget, err := strata.NewWriteBudget(256 << 20)
	if err != nil {
		log.Fatal(err)
	}
	shared := cache.New(128 << 20)
	fs := vfs.NewMem()
	var parts []*strata.DB
	for i := range 4 {
		db, err := strata.Open(fmt.Sprintf("partition-%d", i), &strata.Options{FS: fs, MemoryBudget: budget, Cache: shared})
		if err != nil {
			log.Fatal(err)
		}
		defer db.Close()
		parts = append(parts, db)
	}

	db := parts[0]
	if err := db.BeginBulkLoad(); err != nil {
		log.Fatal(err)
	}
	for i := range 1000 {
		if err := db.Set([]byte(fmt.Sprintf("key-%04d", i)), make([]byte, 2048), strata.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.EndBulkLoad(); err != nil { // durable from here on
		log.Fatal(err)
	}

	ok, err := db.Has([]byte("key-0042"))
	if err != nil {
		log.Fatal(err)
	}
	m := db.Metrics()
	fmt.Println("has key-0042:", ok, "value-log reads:", m.ValueLogs.Reads)
	fmt.Println("budget limit:", m.MemTable.Budget.Limit>>20, "MiB")
	// Output:
	// has key-0042: true value-log reads: 0
	// budget limit: 256 MiB
}
