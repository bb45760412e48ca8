package strataprom_test

import (
	"fmt"
	"log"
	"strings"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/contrib/strataprom"
	"github.com/strata-db/strata/vfs"
)

func ExampleNewCollector() {
	db, err := strata.Open("example-db", &strata.Options{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	reg := prom.NewRegistry()
	reg.MustRegister(strataprom.NewCollector(db, &strataprom.Opts{ConstLabels: prom.Labels{"db": "orders"}}))
	// Serve it with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).

	for i := range 3 {
		if err := db.Set([]byte(fmt.Sprint("order:", i)), []byte("paid"), strata.Sync); err != nil {
			log.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		switch name := f.GetName(); {
		case name == "strata_user_bytes_total":
			fmt.Println(name, f.GetMetric()[0].GetCounter().GetValue())
		case strings.HasPrefix(name, "strata_commit_latency"):
			m := f.GetMetric()[0]
			fmt.Println(name, m.GetHistogram().GetSampleCount(), "commits, label", m.GetLabel()[0].GetName(), "=", m.GetLabel()[0].GetValue())
		}
	}
	// Output:
	// strata_commit_latency_seconds 3 commits, label db = orders
	// strata_user_bytes_total 33
}
