package stratagoka_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/lovoo/goka"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/contrib/stratagoka"
	"github.com/strata-db/strata/contrib/strataprom"
)

// TestProcessorPrometheus runs a counter processor through goka's tester
// with a Prometheus collector per partition registered by Options.OnOpen,
// and restarts it in the same process with the same registry: the
// partition's DB is reopened and registered again without a duplicate
// registration error, and between runs the registry reports nothing of
// the closed DB. Once with the collector unregistered when the storage
// closes, once left to strataprom.Register to replace.
func TestProcessorPrometheus(t *testing.T) {
	for _, unregister := range []bool{true, false} {
		t.Run(fmt.Sprint("unregister=", unregister), func(t *testing.T) {
			dir := t.TempDir()
			reg := prometheus.NewPedanticRegistry()
			opened := 0
			build := stratagoka.NewBuilder(dir, &stratagoka.Options{
				MemoryBudget: 32 << 20, CacheSize: 8 << 20,
				OnOpen: func(topic string, partition int32, db *strata.DB) (func(), error) {
					opened++
					c, err := strataprom.Register(reg, db, &strataprom.Opts{ConstLabels: prometheus.Labels{
						"topic": topic, "partition": strconv.Itoa(int(partition)),
					}})
					if err != nil || !unregister {
						return nil, err
					}
					return func() { reg.Unregister(c) }, nil
				},
			})
			var changelog []changelogEntry
			for round := range 3 {
				tt := newTester(t, changelog)
				proc, err := goka.NewProcessor(nil, counter(),
					goka.WithTester(tt),
					goka.WithStorageBuilder(build),
					goka.WithConsumerSaramaBuilder(feedOf(changelog).builder(tt.ConsumerBuilder())),
				)
				require.NoError(t, err)
				_, stop := startProcessor(t, proc)
				for i := range 100 {
					tt.Consume("clicks", fmt.Sprintf("user-%d", i%10), "click")
				}
				require.Positive(t, userBytes(t, reg, "counter-table", "0"), "round %d", round)
				stop()
				changelog = tableChangelog(tt)

				families, err := reg.Gather()
				require.NoError(t, err)
				require.Empty(t, families, "round %d: the closed partition still reports", round)
			}
			require.Equal(t, 3, opened)
		})
	}
}

// userBytes returns strata_user_bytes_total of the partition's collector,
// or -1 when reg has none.
func userBytes(t *testing.T, reg *prometheus.Registry, topic, partition string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "strata_user_bytes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == topic && labels["partition"] == partition {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// TestOnOpenError: an error from OnOpen fails the build and closes the
// partition's DB, so that the next build opens it.
func TestOnOpenError(t *testing.T) {
	dir := t.TempDir()
	fail := true
	closed := 0
	build := stratagoka.NewBuilder(dir, &stratagoka.Options{
		OnOpen: func(topic string, partition int32, db *strata.DB) (func(), error) {
			if fail {
				return nil, fmt.Errorf("no metrics for %s/%d", topic, partition)
			}
			return func() { closed++ }, nil
		},
	})
	_, err := build("t", 3)
	require.ErrorContains(t, err, "no metrics for t/3")
	fail = false
	st, err := build("t", 3)
	require.NoError(t, err)
	require.NoError(t, st.Open())
	require.NoError(t, st.Close())
	require.Equal(t, 1, closed, "onClose runs when the storage closes")
}
