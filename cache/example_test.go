package cache_test

import (
	"fmt"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/internal/base"
)

func Example() {
	c := cache.New(64 << 20) // 64 MiB
	id := c.NewID()          // one per DB (namespace of file numbers)

	const file = base.FileNum(7)
	if c.Get(id, file, 4096) == nil {
		block := []byte("block read from the file") // after checksum and decompression
		c.Set(id, file, 4096, block)
	}
	fmt.Printf("%s\n", c.Get(id, file, 4096))

	c.EvictFile(id, file) // the file was deleted
	fmt.Println(c.Get(id, file, 4096) == nil)

	m := c.Metrics()
	fmt.Println(m.Count, m.Hits, m.Misses)
	// Output:
	// block read from the file
	// true
	// 0 1 2
}
