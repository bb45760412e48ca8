package strataprom

import (
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

// TestCollector: every described metric is collected, the registry
// accepts them (names, labels and types consistent), and a histogram's
// buckets add up to its count.
func TestCollector(t *testing.T) {
	db, err := strata.Open("db", &strata.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	for i := range 100 {
		require.NoError(t, db.Set([]byte{byte(i)}, make([]byte, 2000), strata.NoSync))
	}
	require.NoError(t, db.Flush())
	_, err = db.Get([]byte{7})
	require.NoError(t, err)

	c := NewCollector(db, nil)
	reg := prom.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(metricDefs))
	require.Equal(t, len(metricDefs)+3+3*(len(db.Metrics().Levels)-1), testutil.CollectAndCount(c),
		"one series per metric, four written parts, three series per level")

	for _, f := range families {
		if f.GetName() != "strata_get_latency_seconds" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		require.Equal(t, uint64(1), h.GetSampleCount())
		last := h.GetBucket()[len(h.GetBucket())-1]
		require.Equal(t, uint64(1), last.GetCumulativeCount())
	}
}

// TestHistogramFold: the coarse buckets count exactly the DB's buckets
// below each bound.
func TestHistogramFold(t *testing.T) {
	h := &strata.LatencyHistogram{Count: 4, Sum: 3 * time.Second, Buckets: []strata.LatencyBucket{
		{Lower: 896, Upper: 1024, Count: 1},                       // below 1024 ns
		{Lower: 1024, Upper: 1152, Count: 1},                      // below 4096 ns
		{Lower: 30 << 30, Upper: 32 << 30, Count: 1},              // below 2^35 ns: past the last bound
		{Lower: time.Duration(1) << 36, Upper: 1 << 37, Count: 1}, // likewise
	}}
	m := histogram(prom.NewDesc("x", "x", nil, nil), h)
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	b := out.GetHistogram().GetBucket()
	require.Equal(t, 1024e-9, b[0].GetUpperBound())
	require.Equal(t, uint64(1), b[0].GetCumulativeCount())
	require.Equal(t, uint64(2), b[1].GetCumulativeCount())
	require.Equal(t, uint64(2), b[len(b)-1].GetCumulativeCount())
	require.Equal(t, uint64(4), out.GetHistogram().GetSampleCount())
}

// TestCollectorClosedDB: a closed DB's collector reports nothing, and
// Register replaces it by the collector of the DB reopened under the same
// labels, where a second registration of an open DB's collector is refused
// as client_golang refuses duplicates.
func TestCollectorClosedDB(t *testing.T) {
	fs := vfs.NewMem()
	labels := &Opts{ConstLabels: prom.Labels{"db": "orders"}}
	reg := prom.NewPedanticRegistry()
	db, err := strata.Open("db", &strata.Options{FS: fs})
	require.NoError(t, err)
	c, err := Register(reg, db, labels)
	require.NoError(t, err)
	require.Same(t, db, c.DB())
	families, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(metricDefs))

	_, err = Register(reg, db, labels)
	var dup prom.AlreadyRegisteredError
	require.ErrorAs(t, err, &dup, "a second collector of an open DB")

	require.NoError(t, db.Close())
	families, err = reg.Gather()
	require.NoError(t, err)
	require.Empty(t, families, "a closed DB's collector reports nothing")
	require.Zero(t, testutil.CollectAndCount(c))

	db, err = strata.Open("db", &strata.Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	c2, err := Register(reg, db, labels)
	require.NoError(t, err, "the reopened DB's collector replaces the closed one's")
	families, err = reg.Gather()
	require.NoError(t, err)
	require.Len(t, families, len(metricDefs))
	require.NoError(t, db.Set([]byte("k"), []byte("v"), strata.NoSync))
	families, err = reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "strata_user_bytes_total" {
			require.Equal(t, 2.0, f.GetMetric()[0].GetCounter().GetValue(), "the reopened DB's figures")
		}
	}
	// Unregister goes by the descriptions, not the collector: either one
	// names the registration.
	require.True(t, reg.Unregister(c2))
}
