// Package strataprom exports a Strata DB's metrics to Prometheus: a
// prometheus.Collector that reads DB.Metrics on each scrape. It is a
// module of its own so that the engine does not depend on
// client_golang.
//
//	c, err := strataprom.Register(reg, db, nil)
//
// A collector reports nothing once its DB is closed, and Register replaces
// the collector of a closed DB registered with the same labels, so that a
// process that closes and reopens a database (a stream processor's
// partition moving away and back) registers it again without a
// "duplicate metrics collector registration" error. To drop a closed DB's
// collector at once, reg.Unregister(c); package stratagoka's Options.OnOpen
// is the place for both in a goka processor (its ExampleOptions_prometheus).
//
// The metrics, all prefixed strata_ and labelled with Opts.ConstLabels:
//
//	user_bytes_total                     key and value bytes written through the API
//	written_bytes_total{part}            bytes written, part = wal, value_log, flush, compaction
//	write_amplification                  written bytes / user bytes
//	gc_relocated_bytes_total             value bytes GC copied (part of value_log)
//	gc_deleted_bytes_total, gc_deleted_files_total, gc_passes_total
//	space_amplification                  tables and value logs over the bytes the data needs
//	level_files{level}, level_bytes{level}, level_score{level}
//	value_log_files, value_log_bytes, value_log_live_bytes, value_log_garbage_bytes
//	memtable_bytes, memtable_immutable, memtable_memory_bytes
//	write_budget_share                   the DB's share of Options.MemoryBudget's limit
//	value_log_reads_total                value-log records read (Get, iterators, merges)
//	flushes_total, compactions_total, compactions_in_progress, compaction_debt_bytes
//	write_stalls_total, write_stall_seconds_total, write_slowdown_seconds_total
//	block_cache_bytes, block_cache_hits_total, block_cache_misses_total
//	commit_latency_seconds, commit_wait_seconds, wal_sync_latency_seconds,
//	get_latency_seconds, iter_seek_latency_seconds   histograms
//
// The histograms' buckets are a coarse view of the DB's own (which have
// eight buckets per power of two): upper bounds at 4^k * 1024 ns, from
// about 1 µs to 17 s, each an exact boundary of the DB's buckets.
package strataprom

import (
	"errors"
	"strconv"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/strata-db/strata"
)

// Opts configure the collector. A nil *Opts is the zero value.
type Opts struct {
	// ConstLabels are added to every metric, for telling several DBs of
	// one process apart (for example {"db": "orders"}).
	ConstLabels prom.Labels
}

// Collector is a prometheus.Collector of one DB's metrics.
type Collector struct {
	db    *strata.DB
	descs map[string]*prom.Desc
}

var _ prom.Collector = (*Collector)(nil)

// metric names and help, with their variable labels.
var metricDefs = []struct {
	name, help string
	labels     []string
}{
	{"user_bytes_total", "Key and value bytes written through the API since Open.", nil},
	{"written_bytes_total", "Bytes the DB wrote since Open, by part: wal, value_log, flush, compaction.", []string{"part"}},
	{"write_amplification", "Bytes written per user byte since Open (all parts).", nil},
	{"gc_relocated_bytes_total", "Value bytes garbage collection copied out of value logs (part of written_bytes_total{part=\"value_log\"}).", nil},
	{"gc_deleted_bytes_total", "Bytes of value logs garbage collection deleted.", nil},
	{"gc_deleted_files_total", "Value logs garbage collection deleted.", nil},
	{"gc_passes_total", "Garbage-collection passes run.", nil},
	{"space_amplification", "Bytes of tables and value logs over the bytes the data needs.", nil},
	{"level_files", "Tables in the level.", []string{"level"}},
	{"level_bytes", "Bytes of the level's tables.", []string{"level"}},
	{"level_score", "The level's compaction score (1 or more: the picker wants to compact it).", []string{"level"}},
	{"value_log_files", "Value-log files.", nil},
	{"value_log_bytes", "Bytes of the value-log files.", nil},
	{"value_log_live_bytes", "Value-log record bytes that tables point to.", nil},
	{"value_log_garbage_bytes", "Value-log record bytes no table points to.", nil},
	{"memtable_bytes", "Bytes used by the mutable memtable and the frozen ones.", nil},
	{"memtable_immutable", "Frozen memtables waiting for flush.", nil},
	{"memtable_memory_bytes", "Memory the memtables' arenas hold (they grow in chunks).", nil},
	{"write_budget_share", "This DB's share of the shared write budget's limit (0 without one).", nil},
	{"value_log_reads_total", "Value-log records read by Get, iterators and merges (Has reads none).", nil},
	{"flushes_total", "Memtable flushes since Open.", nil},
	{"compactions_total", "Compactions since Open.", nil},
	{"compactions_in_progress", "Compactions running now.", nil},
	{"compaction_debt_bytes", "Estimated bytes compaction is behind.", nil},
	{"write_stalls_total", "Times writers waited for flushes or compactions.", nil},
	{"write_stall_seconds_total", "Time writers spent stalled.", nil},
	{"write_slowdown_seconds_total", "Time writes were slowed down.", nil},
	{"block_cache_bytes", "Bytes held by the block cache.", nil},
	{"block_cache_hits_total", "Block cache hits.", nil},
	{"block_cache_misses_total", "Block cache misses.", nil},
	{"commit_latency_seconds", "Latency of Set, Delete, DeleteRange and Apply.", nil},
	{"commit_wait_seconds", "Time writes that found another writer committing waited in the commit queue.", nil},
	{"wal_sync_latency_seconds", "Latency of a synced commit group's sync (value log, then WAL).", nil},
	{"get_latency_seconds", "Latency of Get.", nil},
	{"iter_seek_latency_seconds", "Latency of an iterator's SeekGE, SeekLT, First and Last.", nil},
}

// NewCollector returns a collector of db's metrics. Register it with a
// prometheus.Registerer; each scrape calls db.Metrics once.
func NewCollector(db *strata.DB, o *Opts) *Collector {
	var labels prom.Labels
	if o != nil {
		labels = o.ConstLabels
	}
	c := &Collector{db: db, descs: make(map[string]*prom.Desc, len(metricDefs))}
	for _, m := range metricDefs {
		c.descs[m.name] = prom.NewDesc("strata_"+m.name, m.help, m.labels, labels)
	}
	return c
}

// Register registers a collector of db's metrics with reg and returns it.
// A collector of a closed DB that reg holds with the same descriptions
// (the same labels) is unregistered first and replaced; any other
// registration error is returned as reg.Register returns it (for one of a
// DB still open, a prometheus.AlreadyRegisteredError).
func Register(reg prom.Registerer, db *strata.DB, o *Opts) (*Collector, error) {
	c := NewCollector(db, o)
	err := reg.Register(c)
	var dup prom.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if old, ok := dup.ExistingCollector.(*Collector); ok && old.db.Closed() {
			reg.Unregister(old)
			err = reg.Register(c)
		}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DB returns the DB the collector reads.
func (c *Collector) DB() *strata.DB { return c.db }

// Describe sends the descriptions of every metric.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	for _, m := range metricDefs {
		ch <- c.descs[m.name]
	}
}

// Collect reads the DB's metrics and sends them; once the DB is closed it
// sends nothing (the figures of a closed DB describe nothing live).
func (c *Collector) Collect(ch chan<- prom.Metric) {
	if c.db.Closed() {
		return
	}
	m := c.db.Metrics()
	counter := func(name string, v float64, labels ...string) {
		ch <- prom.MustNewConstMetric(c.descs[name], prom.CounterValue, v, labels...)
	}
	gauge := func(name string, v float64, labels ...string) {
		ch <- prom.MustNewConstMetric(c.descs[name], prom.GaugeValue, v, labels...)
	}
	counter("user_bytes_total", float64(m.UserBytes))
	counter("written_bytes_total", float64(m.WAL.BytesWritten), "wal")
	counter("written_bytes_total", float64(m.ValueLogs.BytesWritten), "value_log")
	counter("written_bytes_total", float64(m.Flush.BytesWritten), "flush")
	counter("written_bytes_total", float64(m.Compact.BytesWritten), "compaction")
	gauge("write_amplification", m.WriteAmp)
	counter("gc_relocated_bytes_total", float64(m.GC.RelocatedBytes))
	counter("gc_deleted_bytes_total", float64(m.GC.DeletedBytes))
	counter("gc_deleted_files_total", float64(m.GC.DeletedFiles))
	counter("gc_passes_total", float64(m.GC.Passes))
	gauge("space_amplification", m.SpaceAmp)
	for level, l := range m.Levels {
		name := strconv.Itoa(level)
		gauge("level_files", float64(l.Files), name)
		gauge("level_bytes", float64(l.Bytes), name)
		gauge("level_score", l.Score, name)
	}
	gauge("value_log_files", float64(m.ValueLogs.Files))
	gauge("value_log_bytes", float64(m.ValueLogs.Bytes))
	gauge("value_log_live_bytes", float64(m.ValueLogs.Live))
	gauge("value_log_garbage_bytes", float64(m.ValueLogs.Garbage))
	gauge("memtable_bytes", float64(m.MemTable.Size+m.MemTable.ImmSize))
	gauge("memtable_immutable", float64(m.MemTable.Immutable))
	gauge("memtable_memory_bytes", float64(m.MemTable.Memory))
	gauge("write_budget_share", m.MemTable.Budget.Share)
	counter("value_log_reads_total", float64(m.ValueLogs.Reads))
	counter("flushes_total", float64(m.Flush.Count))
	counter("compactions_total", float64(m.Compact.Count))
	gauge("compactions_in_progress", float64(m.Compact.InProgress))
	gauge("compaction_debt_bytes", float64(m.CompactionDebt))
	counter("write_stalls_total", float64(m.WriteStalls))
	counter("write_stall_seconds_total", m.StallDuration.Seconds())
	counter("write_slowdown_seconds_total", m.SlowdownDuration.Seconds())
	gauge("block_cache_bytes", float64(m.BlockCache.Size))
	counter("block_cache_hits_total", float64(m.BlockCache.Hits))
	counter("block_cache_misses_total", float64(m.BlockCache.Misses))
	for _, h := range []struct {
		name string
		h    *strata.LatencyHistogram
	}{
		{"commit_latency_seconds", &m.Latency.Commit},
		{"commit_wait_seconds", &m.Latency.CommitWait},
		{"wal_sync_latency_seconds", &m.Latency.WALSync},
		{"get_latency_seconds", &m.Latency.Get},
		{"iter_seek_latency_seconds", &m.Latency.IterSeek},
	} {
		ch <- histogram(c.descs[h.name], h.h)
	}
}

// bucketBounds are the exported histograms' upper bounds: 4^k µs-ish
// powers of two of nanoseconds, each a boundary of the DB's buckets.
var bucketBounds = func() []time.Duration {
	var out []time.Duration
	for ns := time.Duration(1 << 10); ns <= 1<<34; ns <<= 2 {
		out = append(out, ns)
	}
	return out
}()

// histogram folds h into a constant Prometheus histogram.
func histogram(desc *prom.Desc, h *strata.LatencyHistogram) prom.Metric {
	cumulative := make(map[float64]uint64, len(bucketBounds))
	var count uint64
	i := 0
	for _, bound := range bucketBounds {
		for i < len(h.Buckets) && h.Buckets[i].Upper <= bound {
			count += h.Buckets[i].Count
			i++
		}
		cumulative[bound.Seconds()] = count
	}
	for ; i < len(h.Buckets); i++ {
		count += h.Buckets[i].Count
	}
	return prom.MustNewConstHistogram(desc, count, h.Sum.Seconds(), cumulative)
}
