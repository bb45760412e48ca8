package strata

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/lsm/manifest"
)

// LevelMetrics describe one level of the tree.
type LevelMetrics struct {
	Files int
	Bytes uint64
	// Score is the level's compaction urgency (1 or more: the picker wants
	// to compact it); Target is its target size (0 when it has none).
	Score  float64
	Target uint64
	// BytesIn is what compactions read from the level; BytesWritten what
	// flushes and compactions wrote into it; BytesMoved what compactions
	// moved into it without rewriting.
	BytesIn      uint64
	BytesWritten uint64
	BytesMoved   uint64
	Compactions  uint64
	Duration     time.Duration
}

// Metrics is a point-in-time summary of the DB. String prints it as tables.
type Metrics struct {
	Levels [manifest.NumLevels]LevelMetrics

	MemTable struct {
		Size      int64 // bytes used by the mutable memtable
		Immutable int   // frozen memtables waiting for flush
		ImmSize   int64 // bytes held by them
	}
	WAL struct {
		BytesWritten uint64 // batch bytes appended to WALs since Open
	}
	Flush struct {
		Count        uint64
		BytesWritten uint64
	}
	Compact struct {
		Count        uint64
		BytesRead    uint64
		BytesWritten uint64
		// InProgress is the number of compactions running now.
		InProgress int
	}
	// UserBytes is the key and value bytes written through the API since
	// Open; WriteAmp is (WAL + flush + compaction bytes) / UserBytes.
	UserBytes uint64
	WriteAmp  float64

	WriteStalls      uint64
	StallDuration    time.Duration
	SlowdownDuration time.Duration
	// ValueLogs describes the value-log files: how many, their bytes, and
	// the values they hold.
	ValueLogs struct {
		Files      int
		Bytes      uint64
		Records    uint64
		ValueBytes uint64
	}
	// BaseLevel is the level L0 compacts into; CompactionDebt estimates the
	// bytes compaction is behind.
	BaseLevel      int
	CompactionDebt uint64

	BlockCache  cache.Metrics
	TablesOpen  int
	Snapshots   int
	VisibleSeq  uint64
	BackgroundE string // the sticky background error, if any
}

// Metrics returns current metrics.
func (d *DB) Metrics() *Metrics {
	m := &Metrics{}
	d.mu.Lock()
	if v := d.vs.Current(); v != nil {
		for _, vl := range v.Vlogs {
			m.ValueLogs.Files++
			m.ValueLogs.Bytes += vl.Size
			m.ValueLogs.Records += vl.Records
			m.ValueLogs.ValueBytes += vl.ValueBytes
		}
		st := compaction.Compute(v, d.opts.pickerOptions())
		m.BaseLevel = st.BaseLevel
		m.CompactionDebt = compaction.Debt(v, d.opts.pickerOptions())
		for level := range m.Levels {
			ls, s := st.Levels[level], d.stats.levels[level]
			lm := LevelMetrics{
				Files: v.NumFiles(level), Bytes: v.LevelSize(level), Score: ls.Score,
				BytesIn: s.bytesIn, BytesWritten: s.bytesWritten, BytesMoved: s.bytesMoved,
				Compactions: s.compactions, Duration: s.duration,
			}
			if ls.MaxBytes > 0 && ls.MaxBytes < 1<<62 {
				lm.Target = uint64(ls.MaxBytes)
			}
			m.Levels[level] = lm
		}
	}
	if d.mem != nil {
		m.MemTable.Size = int64(d.mem.Size())
	}
	m.MemTable.Immutable = len(d.imm)
	for _, im := range d.imm {
		m.MemTable.ImmSize += int64(im.Size())
	}
	m.Snapshots = d.snapshots.l.Len()
	m.Compact.InProgress = d.compactions.running
	if d.bgErr != nil {
		m.BackgroundE = d.bgErr.Error()
	}
	d.mu.Unlock()

	m.WAL.BytesWritten = d.stats.walBytes.Load()
	m.Flush.Count = d.stats.flushes.Load()
	m.Flush.BytesWritten = d.stats.flushBytes.Load()
	m.Compact.Count = d.stats.compactions.Load()
	m.Compact.BytesRead = d.stats.compactInBytes.Load()
	m.Compact.BytesWritten = d.stats.compactOutBytes.Load()
	m.UserBytes = d.stats.userBytes.Load()
	if m.UserBytes > 0 {
		m.WriteAmp = float64(m.WAL.BytesWritten+m.Flush.BytesWritten+m.Compact.BytesWritten) / float64(m.UserBytes)
	}
	m.WriteStalls = d.stats.writeStalls.Load()
	m.StallDuration = time.Duration(d.stats.stallNanos.Load())
	m.SlowdownDuration = time.Duration(d.stats.slowdownNanos.Load())
	if d.cache != nil {
		m.BlockCache = d.cache.Metrics()
	}
	m.TablesOpen = d.tableCache.size()
	m.VisibleSeq = d.visibleSeq.Load()
	return m
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// String formats the metrics as tables.
func (m *Metrics) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tfiles\tsize\ttarget\tscore\tread\twritten\tmoved\tcompactions\ttime\t")
	var total LevelMetrics
	for level, l := range m.Levels {
		target, score := "-", "-"
		if l.Target > 0 {
			target = humanBytes(l.Target)
		}
		if level == 0 || l.Target > 0 && level < len(m.Levels)-1 {
			score = fmt.Sprintf("%.2f", l.Score)
		}
		name := fmt.Sprintf("L%d", level)
		if level == m.BaseLevel && level > 0 {
			name += "*"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", name, l.Files, humanBytes(l.Bytes), target, score,
			humanBytes(l.BytesIn), humanBytes(l.BytesWritten), humanBytes(l.BytesMoved), l.Compactions, l.Duration.Round(time.Millisecond))
		total.Files += l.Files
		total.Bytes += l.Bytes
		total.BytesIn += l.BytesIn
		total.BytesWritten += l.BytesWritten
		total.BytesMoved += l.BytesMoved
		total.Compactions += l.Compactions
		total.Duration += l.Duration
	}
	fmt.Fprintf(tw, "total\t%d\t%s\t\t\t%s\t%s\t%s\t%d\t%s\t\n", total.Files, humanBytes(total.Bytes),
		humanBytes(total.BytesIn), humanBytes(total.BytesWritten), humanBytes(total.BytesMoved), total.Compactions,
		total.Duration.Round(time.Millisecond))
	tw.Flush()
	fmt.Fprintf(&b, "base level: L%d, compaction debt: %s\n", m.BaseLevel, humanBytes(m.CompactionDebt))
	fmt.Fprintf(&b, "value logs: %d files, %s, %d values (%s)\n", m.ValueLogs.Files, humanBytes(m.ValueLogs.Bytes),
		m.ValueLogs.Records, humanBytes(m.ValueLogs.ValueBytes))
	fmt.Fprintf(&b, "memtable: %s, %d immutable (%s)\n",
		humanBytes(uint64(m.MemTable.Size)), m.MemTable.Immutable, humanBytes(uint64(m.MemTable.ImmSize)))
	fmt.Fprintf(&b, "writes: user %s, WAL %s, flushed %s in %d flushes, compacted %s -> %s in %d compactions, write-amp %.2f\n",
		humanBytes(m.UserBytes), humanBytes(m.WAL.BytesWritten), humanBytes(m.Flush.BytesWritten), m.Flush.Count,
		humanBytes(m.Compact.BytesRead), humanBytes(m.Compact.BytesWritten), m.Compact.Count, m.WriteAmp)
	fmt.Fprintf(&b, "stalls: %d (%s), slowed %s\n", m.WriteStalls, m.StallDuration.Round(time.Millisecond), m.SlowdownDuration.Round(time.Millisecond))
	fmt.Fprintf(&b, "block cache: %s / %s, hit rate %.1f%%\n",
		humanBytes(uint64(max(m.BlockCache.Size, 0))), humanBytes(uint64(max(m.BlockCache.Capacity, 0))), 100*m.BlockCache.HitRate())
	fmt.Fprintf(&b, "tables open: %d, snapshots: %d, visible seq: %d\n", m.TablesOpen, m.Snapshots, m.VisibleSeq)
	if m.BackgroundE != "" {
		fmt.Fprintf(&b, "background error: %s\n", m.BackgroundE)
	}
	return b.String()
}
