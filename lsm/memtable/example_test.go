package memtable_test

import (
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/memtable"
)

func Example() {
	m := memtable.New(1 << 20)
	add := func(key string, seq base.SeqNum, kind base.Kind, value string) {
		if err := m.Add(base.MakeInternalKey([]byte(key), seq, kind), []byte(value)); err != nil {
			fmt.Println(err)
		}
	}
	add("apple", 1, base.KindSet, "red")
	add("apple", 3, base.KindSet, "green")
	add("banana", 2, base.KindSet, "yellow")
	add("apple", 4, base.KindDelete, "")
	add("a", 5, base.KindRangeDelete, "b") // deletes [a, b) at seq 5

	// A read at snapshot 3 sees the newest version with seq <= 3.
	v, kind, seq, _ := m.Get([]byte("apple"), 3)
	fmt.Printf("Get(apple, 3) = %s %s#%d\n", v, kind, seq)

	it := m.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s %q\n", it.Key(), it.Value())
	}
	fmt.Println(m.RangeTombstones(base.SeqNumMax))
	// Output:
	// Get(apple, 3) = green SET#3
	// "apple"#4,DEL ""
	// "apple"#3,SET "green"
	// "apple"#1,SET "red"
	// "banana"#2,SET "yellow"
	// [{[97] [98] 5}]
}
