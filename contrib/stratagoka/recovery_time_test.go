package stratagoka_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/lovoo/goka/tester"
	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/contrib/stratagoka"
)

// TestRecoveryTime times a processor recovering its table from a
// changelog of STRATA_GOKA_RECOVERY messages (over a tenth as many keys),
// with Strata's storage (bulk recovery, and without it) and with goka's
// LevelDB storage, twice each, taking turns. The table is the counter's
// (8-byte values), or with STRATA_GOKA_VALUE set, a table of values of
// that many bytes. It is a measurement, not a check: skipped unless the
// variable is set.
//
//	STRATA_GOKA_RECOVERY=1000000 go test -run TestRecoveryTime -v -timeout 30m .
func TestRecoveryTime(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("STRATA_GOKA_RECOVERY"))
	if n <= 0 {
		t.Skip("set STRATA_GOKA_RECOVERY to the number of table messages")
	}
	valueSize, _ := strconv.Atoi(os.Getenv("STRATA_GOKA_VALUE"))
	keys := max(n/10, 1)
	graph := counter()
	feed := &tableFeed{topic: "counter-table"}
	var lastKey string
	var lastValue any
	var tableCodec goka.Codec = new(codec.Int64)
	if valueSize > 0 {
		graph = goka.DefineGroup("blobs",
			goka.Input("blob-input", new(codec.Bytes), func(ctx goka.Context, msg any) { ctx.SetValue(msg) }),
			goka.Persist(new(codec.Bytes)),
		)
		feed.topic = "blobs-table"
		tableCodec = new(codec.Bytes)
	}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("user-%08d", i%keys)
		var v any = int64(i/keys + 1)
		if valueSize > 0 {
			// Incompressible, as serialized state mostly is once
			// compressed by the application.
			b := make([]byte, valueSize)
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			v = b
		}
		enc, err := tableCodec.Encode(v)
		require.NoError(t, err)
		feed.msgs = append(feed.msgs, &sarama.ConsumerMessage{Topic: feed.topic, Key: []byte(key), Value: enc, Offset: int64(i)})
		lastKey, lastValue = key, v
	}
	builders := []struct {
		name  string
		build func(dir string) storage.Builder
	}{
		{"strata", func(dir string) storage.Builder { return stratagoka.NewBuilder(dir, nil) }},
		{"strata-wal", func(dir string) storage.Builder {
			return stratagoka.NewBuilder(dir, &stratagoka.Options{NoBulkRecovery: true})
		}},
		{"leveldb", func(dir string) storage.Builder { return storage.DefaultBuilder(dir) }},
	}
	for rep := 0; rep < 2; rep++ {
		for _, b := range builders {
			dir := filepath.Join(t.TempDir(), b.name)
			tt := tester.New(t)
			// The tester's topic manager tells goka the table's offsets.
			em, err := goka.NewEmitter(nil, goka.Stream(feed.topic), tableCodec, goka.WithEmitterTester(tt))
			require.NoError(t, err)
			for _, m := range feed.msgs {
				v, err := tableCodec.Decode(m.Value)
				require.NoError(t, err)
				require.NoError(t, em.EmitSync(string(m.Key), v))
			}
			require.NoError(t, em.Finish())
			proc, err := goka.NewProcessor(nil, graph,
				goka.WithTester(tt),
				goka.WithStorageBuilder(b.build(dir)),
				goka.WithConsumerSaramaBuilder(feed.builder(tt.ConsumerBuilder())),
			)
			require.NoError(t, err)
			start := time.Now()
			_, stop := startProcessor(t, proc)
			elapsed := time.Since(start)
			got, err := proc.Get(lastKey)
			require.NoError(t, err)
			require.Equal(t, lastValue, got)
			stop()
			t.Logf("%-10s recovered %d messages (%d keys, %d-byte values) in %v: %.0f messages/s, %s on disk",
				b.name, n, keys, max(valueSize, 8), elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), diskUsage(t, dir))
		}
	}
}

// diskUsage returns the bytes of the files under dir, readably.
func diskUsage(t *testing.T, dir string) string {
	var total int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return fmt.Sprintf("%.1f MiB", float64(total)/(1<<20))
}
