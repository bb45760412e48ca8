package filecache

import (
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// BenchmarkHitParallel is the hot path of every point read: goroutines
// take and release a reference to one cached reader (a table every read
// goes through).
func BenchmarkHitParallel(b *testing.B) {
	var open, opens atomic.Int32
	c := New(16)
	k := key(base.FileTypeTable, 1)
	r, err := c.Get(k, opener(&open, &opens))
	if err != nil {
		b.Fatal(err)
	}
	c.Release(r)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := c.Get(k, nil)
			if err != nil {
				b.Error(err)
				return
			}
			c.Release(r)
		}
	})
	c.Close()
}
