package strata_test

import (
	"fmt"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

// Prefix iteration: the keys of one user. With a PrefixExtractor whose
// prefix is the user ("user:NNN/"), the tables' Bloom filters hold the
// prefixes too, and a prefix iterator reads only the tables that may hold
// the user's keys.
func ExampleIterOptions_prefix() {
	db, err := strata.Open("example-db", &strata.Options{
		FS:              vfs.NewMem(),
		PrefixExtractor: strata.FixedPrefix(len("user:042/")),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// Two tables: one whose key range spans user 042 without holding any
	// of its keys, and one that holds them.
	for _, keys := range [][]string{{"user:041/name", "user:043/name"}, {"user:042/cart", "user:042/name"}} {
		for _, k := range keys {
			if err := db.Set([]byte(k), []byte("..."), strata.NoSync); err != nil {
				log.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			log.Fatal(err)
		}
	}

	it, err := db.NewIter(&strata.IterOptions{Prefix: []byte("user:042/")})
	if err != nil {
		log.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s\n", it.Key())
	}
	if err := it.Close(); err != nil {
		log.Fatal(err)
	}
	m := db.Metrics().PrefixFilter
	fmt.Printf("tables asked: %d, ruled out: %d\n", m.Checked, m.Skipped)
	// Output:
	// user:042/cart
	// user:042/name
	// tables asked: 2, ruled out: 1
}

// SeekLE finds the entry in force at a moment: the last key at or before
// it, here the price set last before 12:30.
func ExampleIterator_SeekLE() {
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for k, v := range map[string]string{"price/09:00": "10", "price/12:00": "12", "price/15:00": "9"} {
		if err := db.Set([]byte(k), []byte(v), strata.NoSync); err != nil {
			log.Fatal(err)
		}
	}
	it, err := db.NewIter(&strata.IterOptions{Prefix: []byte("price/")})
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	for _, at := range []string{"12:30", "12:00", "08:00"} {
		if it.SeekLE([]byte("price/" + at)) {
			fmt.Printf("at %s: %s (set at %s)\n", at, it.Value(), it.Key()[len("price/"):])
		} else {
			fmt.Printf("at %s: no price yet\n", at)
		}
	}
	// Output:
	// at 12:30: 12 (set at 12:00)
	// at 12:00: 12 (set at 12:00)
	// at 08:00: no price yet
}
