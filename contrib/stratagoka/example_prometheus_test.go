package stratagoka_test

import (
	"fmt"
	"log"
	"os"
	"strconv"

	"github.com/lovoo/goka/storage"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/contrib/stratagoka"
	"github.com/strata-db/strata/contrib/strataprom"
)

// Per-partition metrics for a goka processor: OnOpen registers a
// Prometheus collector of each partition's DB, labelled with its topic
// and partition. A partition that moves away and back within the process
// registers again: its closed DB's collector reports nothing meanwhile,
// and Register replaces it. (To drop it at once instead, return
// func() { reg.Unregister(c) } as the onClose.)
func ExampleOptions_prometheus() {
	dir, err := os.MkdirTemp("", "stratagoka-prometheus")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	reg := prometheus.NewRegistry() // served by promhttp.HandlerFor(reg, ...)
	build := stratagoka.NewBuilder(dir, &stratagoka.Options{
		OnOpen: func(topic string, partition int32, db *strata.DB) (func(), error) {
			_, err := strataprom.Register(reg, db, &strataprom.Opts{ConstLabels: prometheus.Labels{
				"topic": topic, "partition": strconv.Itoa(int(partition)),
			}})
			return nil, err
		},
	})
	// In a processor: goka.WithStorageBuilder(build). Here the builder is
	// driven as goka drives it.
	p0 := openPartition(build, 0, "ann", "bob")
	p1 := openPartition(build, 1, "cy")
	printUserBytes(reg)

	if err := p0.Close(); err != nil { // partition 0 moves away
		log.Fatal(err)
	}
	printUserBytes(reg)

	p0 = openPartition(build, 0, "dee") // and comes back
	printUserBytes(reg)
	p0.Close()
	p1.Close()
	// Output:
	// partition 0: 8 bytes written
	// partition 1: 3 bytes written
	// --
	// partition 1: 3 bytes written
	// --
	// partition 0: 4 bytes written
	// partition 1: 3 bytes written
	// --
}

// openPartition builds, opens and recovers partition p of the table, and
// sets each key to "1".
func openPartition(build storage.Builder, p int32, keys ...string) storage.Storage {
	st, err := build("clicks-table", p)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Open(); err != nil {
		log.Fatal(err)
	}
	if err := st.MarkRecovered(); err != nil {
		log.Fatal(err)
	}
	for _, k := range keys {
		if err := st.Set(k, []byte("1")); err != nil {
			log.Fatal(err)
		}
	}
	return st
}

// printUserBytes prints each partition's strata_user_bytes_total, the
// bytes written through the API since its DB opened.
func printUserBytes(reg *prometheus.Registry) {
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "strata_user_bytes_total" {
			continue
		}
		for _, m := range f.GetMetric() { // sorted by label values
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" {
					fmt.Printf("partition %s: %.0f bytes written\n", l.GetValue(), m.GetCounter().GetValue())
				}
			}
		}
	}
	fmt.Println("--")
}
