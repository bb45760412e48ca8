// Command quickstart is the program README opens with, kept here so that
// a test compiles and runs it (main_test.go) and checks that README shows
// it as it is, from the package clause on.
package main

import (
	"fmt"
	"log"

	"github.com/strata-db/strata"
)

func main() {
	db, err := strata.Open("demo-db", nil) // a directory; nil: the default options
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	for _, user := range []string{"alice", "bob", "carol"} {
		// NoSync: durable at the next Sync; strata.Sync: when Set returns.
		if err := db.Set([]byte("user:"+user), []byte("joined"), strata.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	if err := db.Sync(); err != nil {
		log.Fatal(err)
	}

	v, err := db.Get([]byte("user:bob")) // errors.Is(err, strata.ErrNotFound) when absent
	fmt.Printf("bob %s, %v\n", v, err)

	it, err := db.NewIter(&strata.IterOptions{Prefix: []byte("user:")})
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s = %s\n", it.Key(), it.Value())
	}
	if err := it.Close(); err != nil { // the error that stopped the scan, if any
		log.Fatal(err)
	}
}
