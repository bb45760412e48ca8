package stratagoka_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/tester"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/contrib/stratagoka"
)

// counter counts the messages of each key in its group table.
func counter() *goka.GroupGraph {
	return goka.DefineGroup("counter",
		goka.Input("clicks", new(codec.String), func(ctx goka.Context, msg any) {
			var n int64
			if v := ctx.Value(); v != nil {
				n = v.(int64)
			}
			ctx.SetValue(n + 1)
		}),
		goka.Persist(new(codec.Int64)),
	)
}

// runProcessor starts a counter processor on tt with Strata storage in
// dir, waits until it has recovered, and returns it with its stop.
func runProcessor(t *testing.T, tt *tester.Tester, changelog []changelogEntry, dir string) (*goka.Processor, func()) {
	t.Helper()
	proc, err := goka.NewProcessor(nil, counter(),
		goka.WithTester(tt),
		// After WithTester, which would give the processor memory storage
		// and the tester's consumer.
		goka.WithStorageBuilder(stratagoka.NewBuilder(dir, &stratagoka.Options{MemoryBudget: 32 << 20, CacheSize: 8 << 20})),
		goka.WithConsumerSaramaBuilder(feedOf(changelog).builder(tt.ConsumerBuilder())),
	)
	require.NoError(t, err)
	return startProcessor(t, proc)
}

// startProcessor runs proc until it has recovered, and returns it with
// its stop.
func startProcessor(t *testing.T, proc *goka.Processor) (*goka.Processor, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proc.Run(ctx) }()
	require.NoError(t, proc.WaitForReady())
	return proc, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// changelogEntry is one message of the group table's topic.
type changelogEntry struct {
	key   string
	value any // int64
}

// newTester returns a tester whose group-table topic holds changelog, as
// a Kafka cluster would when a processor restarts: goka's tester cannot
// restart a processor itself (its Consume waits for every processor it
// ever saw), so each run of the processor gets a tester of its own with
// the table topic carried over, offsets and all.
func newTester(t *testing.T, changelog []changelogEntry) *tester.Tester {
	tt := tester.New(t)
	em, err := goka.NewEmitter(nil, "counter-table", new(codec.Int64), goka.WithEmitterTester(tt))
	require.NoError(t, err)
	for _, e := range changelog {
		require.NoError(t, em.EmitSync(e.key, e.value))
	}
	require.NoError(t, em.Finish())
	return tt
}

// feedOf serves changelog as the group table's topic (see tableFeed).
func feedOf(changelog []changelogEntry) *tableFeed {
	f := &tableFeed{topic: "counter-table"}
	var c codec.Int64
	for i, e := range changelog {
		v, _ := c.Encode(e.value)
		f.msgs = append(f.msgs, &sarama.ConsumerMessage{Topic: f.topic, Key: []byte(e.key), Value: v, Offset: int64(i)})
	}
	return f
}

// tableChangelog returns every message of tt's group-table topic.
func tableChangelog(tt *tester.Tester) []changelogEntry {
	qt := tt.NewQueueTracker("counter-table")
	qt.Seek(0)
	var out []changelogEntry
	for {
		key, value, ok := qt.Next()
		if !ok {
			return out
		}
		out = append(out, changelogEntry{key, value})
	}
}

// TestProcessorRestarts runs a counter processor through goka's tester,
// restarting it between rounds of messages: with its local state kept (it
// recovers from its stored offset), and once with it deleted (it recovers
// the whole table from the changelog). Counts stay exact.
func TestProcessorRestarts(t *testing.T) {
	const keys, perRound, rounds = 200, 1000, 4
	dir := t.TempDir()
	want := map[string]int64{}
	var changelog []changelogEntry
	for round := 0; round < rounds; round++ {
		if round == 2 {
			require.NoError(t, os.RemoveAll(dir)) // lose the local state
		}
		tt := newTester(t, changelog)
		proc, stop := runProcessor(t, tt, changelog, dir)
		for key, n := range want {
			got, err := proc.Get(key)
			require.NoError(t, err)
			require.Equal(t, n, got, "round %d: recovered count of %s", round, key)
		}
		for i := 0; i < perRound; i++ {
			key := fmt.Sprintf("user-%d", (i*7+round)%keys)
			tt.Consume("clicks", key, "click")
			want[key]++
		}
		for key, n := range want {
			got, err := proc.Get(key)
			require.NoError(t, err)
			require.Equal(t, n, got, "round %d: count of %s", round, key)
		}
		stop()
		changelog = tableChangelog(tt)
		require.Len(t, changelog, (round+1)*perRound)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "counter-table.0", filepath.Base(entries[0].Name()))
}
