package strata

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/strata-db/strata/cache"
	"github.com/strata-db/strata/compaction"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
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
		// Memory is the memory the memtables' arenas hold, mutable and
		// frozen: they grow in chunks, so it follows Size + ImmSize.
		Memory int64
		// With Options.MemoryBudget: the budget's limit, the memtable
		// memory of every DB sharing it (Used), the part of it charged to
		// this DB (Charged: Memory as of its last write), and this DB's
		// share of the limit (Charged / Limit). Zero without a budget.
		Budget struct {
			Limit, Used, Charged int64
			Share                float64
			// Waits counts writes that waited for the budget.
			Waits uint64
		}
	}
	WAL struct {
		// BytesWritten: batch bytes appended to WALs since Open (with
		// values written at commit, their pointers rather than the values).
		BytesWritten uint64
	}
	Flush struct {
		Count        uint64 // memtables flushed since Open
		BytesWritten uint64 // table bytes the flushes wrote (not value logs)
	}
	Ingest struct {
		Count        uint64 // successful DB.Ingest calls since Open
		BytesWritten uint64 // table bytes they wrote (their value logs are linked)
	}
	Compact struct {
		Count        uint64 // compactions since Open, moves included
		BytesRead    uint64 // table bytes they read
		BytesWritten uint64 // table bytes they wrote (not value logs)
		// InProgress is the number of compactions running now.
		InProgress int
		// Expired counts entries flushes and compactions dropped (or turned
		// into tombstones) because their TTL had passed; ValueLogReads the
		// value-log records compactions read, which only moving values out
		// of a value log being collected does (expiry never reads one).
		Expired       uint64
		ValueLogReads uint64
	}
	// UserBytes is the key and value bytes written through the API since
	// Open. WriteAmp is every byte the DB wrote per user byte: (WAL.
	// BytesWritten + ValueLogs.BytesWritten + Flush.BytesWritten +
	// Compact.BytesWritten) / UserBytes. Garbage collection's copies are in
	// those parts: the values it relocates in ValueLogs.BytesWritten (also
	// counted alone in GC.RelocatedBytes), the tables it rewrites in
	// Compact, a rewrite's repointing batches in WAL. The manifest's few
	// bytes are left out.
	UserBytes uint64
	WriteAmp  float64

	// PrefixFilter counts, since Open, the tables iterators with
	// IterOptions.Prefix asked the Bloom filter about (with
	// Options.PrefixExtractor), and those it ruled out: Skipped tables had
	// no block read.
	PrefixFilter struct{ Checked, Skipped uint64 }

	// Latency holds histograms of how long operations took since Open,
	// with percentiles (see LatencyHistogram).
	Latency struct {
		// Commit: Set, Delete, DeleteRange and Apply, from the call to the
		// return: waiting for the group's leader, writing (and syncing) the
		// WAL and value log, inserting into the memtable, write stalls.
		Commit LatencyHistogram
		// CommitWait: the writes that found another writer committing,
		// from joining the commit queue until a leader had committed them
		// or they became the leader. Its count against Commit's is the
		// share of writes that waited; with more writing goroutines than
		// processors, a woken writer may wait for the scheduler as well.
		CommitWait LatencyHistogram
		// WALSync: a synced commit group making itself durable: the
		// active value log's sync, then the WAL's.
		WALSync LatencyHistogram
		// Get: DB.Get and Snapshot.Get, value-log reads included.
		Get LatencyHistogram
		// Has: DB.Has and Snapshot.Has.
		Has LatencyHistogram
		// IterSeek: an Iterator's SeekGE, SeekLT, First and Last, up to
		// the first entry (its value is read lazily, by Value).
		IterSeek LatencyHistogram
	}

	WriteStalls      uint64
	StallDuration    time.Duration
	SlowdownDuration time.Duration
	// ValueLogs describes the value-log files: how many, their bytes, the
	// values they hold, and the garbage ledger's totals (Live: record bytes
	// tables point to; Garbage: record bytes none does). BytesWritten is
	// what commits, flushes and garbage collection wrote to value logs
	// since Open. List has a line per value log.
	ValueLogs struct {
		Files        int
		Bytes        uint64
		Records      uint64
		ValueBytes   uint64
		Live         uint64
		Garbage      uint64
		BytesWritten uint64
		// Reads counts the value-log records read for Get, Snapshot.Get,
		// iterators' values and merges since Open (compactions' reads are
		// Compact.ValueLogReads). Has never adds to it. An open iterator
		// adds its reads every 64 rows and when it closes.
		Reads uint64
		Open  int // readers open
		List  []ValueLogMetrics
	}
	// GC describes value-log garbage collection since Open.
	GC struct {
		Policy string
		// Passes run, value logs deleted (and their bytes), collections
		// started, rewrite jobs completed.
		Passes       uint64
		DeletedFiles uint64
		DeletedBytes uint64
		Collections  uint64
		Rewrites     uint64
		// Relocated records and their bytes: live values copied out of
		// value logs being collected (by recompaction or rewrite).
		Relocated      uint64
		RelocatedBytes uint64
		// InProgress collections; Draining value logs (rewritten, waiting
		// for their old entries to leave the tree).
		InProgress int
		Draining   int
		// WriteAmp is RelocatedBytes over DeletedBytes: bytes GC wrote per
		// byte it freed.
		WriteAmp float64
		// Idle: no pass is due, no collection, rewrite or GC-requested
		// compaction is pending, and no value log is draining.
		Idle bool
	}
	// SpaceAmp estimates space amplification: the bytes of tables and
	// value logs over the bytes the data needs (tables plus live value-log
	// records).
	SpaceAmp float64
	// BaseLevel is the level L0 compacts into; CompactionDebt estimates the
	// bytes compaction is behind.
	BaseLevel      int
	CompactionDebt uint64

	BlockCache  cache.Metrics
	TablesOpen  int
	Snapshots   int
	VisibleSeq  uint64
	BackgroundE string // the sticky background error, if any

	// LearnedIndex describes the learned indexes of the open tables and
	// the point lookups they served.
	LearnedIndex LearnedIndexMetrics

	// Shared describes the shared files (Options.SharedStore; zero
	// without one).
	Shared SharedMetrics
}

// SharedMetrics describes a database's shared files: how many the tree
// holds and how many wait to be uploaded, their local cache, and the
// store requests of the read path.
type SharedMetrics struct {
	Tables, ValueLogs int    // shared files of the current version
	Bytes             uint64 // their bytes
	// Pending are the local files that qualify for sharing and are not
	// shared yet (uploaded by the share loop, in the background);
	// Failures counts failed uploads and releases (retried).
	Pending, Failures int
	// Warming is set while the warm-up (Options.SharedWarmup) still
	// downloads files.
	Warming bool
	// Reconciled is set once the database has turned the hold of a
	// checkpoint it was opened from into markers and dropped the
	// references that a crash left in the store (markers on objects it
	// does not use): in the background, from a second after Open.
	Reconciled   bool
	remote.Stats // the cache and the read path's GETs, since Open
}

func (m SharedMetrics) String() string {
	warming := ""
	if m.Warming {
		warming = ", warming up"
	}
	return fmt.Sprintf("%d tables, %d value logs, %s; %d pending, %d failures; cache %s / %s; %d GETs (%s), part hits %d, misses %d, prefetched %d, evicted %d (%s), copies %d%s",
		m.Tables, m.ValueLogs, humanBytes(m.Bytes), m.Pending, m.Failures,
		humanBytes(uint64(max(m.CachedBytes, 0))), humanBytes(uint64(max(m.CacheSize, 0))), m.Gets, humanBytes(uint64(m.GetBytes)),
		m.PartHits, m.PartMisses, m.Prefetches, m.Evicted, humanBytes(uint64(m.EvictedBytes)), m.Copies, warming)
}

// ValueLogMetrics is one value log's line of the garbage ledger.
type ValueLogMetrics struct {
	FileNum  uint64
	Size     uint64
	Live     uint64
	Garbage  uint64
	Pointers uint64
	// State is "", "pinned", "collecting" or "draining".
	State string
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
		l := d.ledgerLocked(v)
		m.SpaceAmp = l.SpaceAmp()
		for _, f := range l.Files {
			m.ValueLogs.Live += f.Live
			m.ValueLogs.Garbage += f.Garbage()
			vm := ValueLogMetrics{FileNum: uint64(f.FileNum), Size: f.Size, Live: f.Live, Garbage: f.Garbage(), Pointers: f.Pointers}
			switch {
			case f.Pinned:
				vm.State = "pinned"
			case f.Draining:
				vm.State = "draining"
			case f.Collecting:
				vm.State = "collecting"
			}
			m.ValueLogs.List = append(m.ValueLogs.List, vm)
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
		m.MemTable.Memory = d.mem.Memory()
		m.MemTable.Budget.Charged = d.mem.charged.Load()
	}
	m.MemTable.Immutable = len(d.imm)
	for _, im := range d.imm {
		m.MemTable.ImmSize += int64(im.Size())
		m.MemTable.Memory += im.Memory()
		m.MemTable.Budget.Charged += im.charged.Load()
	}
	if b := d.writeBudget(); b != nil {
		mb := &m.MemTable.Budget
		mb.Limit, mb.Used = b.Limit(), b.Used()
		mb.Share = float64(mb.Charged) / float64(mb.Limit)
		mb.Waits = d.stats.budgetWaits.Load()
	} else {
		m.MemTable.Budget.Charged = 0
	}
	m.Snapshots = d.snapshots.l.Len()
	g := d.gc.stats
	m.GC.Policy = d.opts.GCPolicy.Name()
	if d.opts.DisableGC {
		m.GC.Policy = "off"
	}
	m.GC.Passes, m.GC.DeletedFiles, m.GC.DeletedBytes = g.passes, g.deletedFiles, g.deletedBytes
	m.GC.Collections, m.GC.Rewrites = g.collections, g.rewrites
	m.GC.Relocated, m.GC.RelocatedBytes = g.relocated, g.relocatedBytes
	m.GC.Draining = len(d.gc.draining)
	m.GC.InProgress = len(d.gc.collecting) - m.GC.Draining
	m.GC.Idle = d.gcIdleLocked() && m.GC.Draining == 0 && !d.compactions.compactL0
	if g.deletedBytes > 0 {
		m.GC.WriteAmp = float64(g.relocatedBytes) / float64(g.deletedBytes)
	}
	m.Compact.InProgress = d.compactions.running
	if s := d.shared; s != nil {
		v := d.vs.Current()
		v.SharedFiles(func(sf manifest.SharedFile) {
			if sf.Vlog {
				m.Shared.ValueLogs++
				if vl := v.Vlogs[sf.FileNum]; vl != nil {
					m.Shared.Bytes += vl.Size
				}
			} else {
				m.Shared.Tables++
			}
		})
		v.Files(func(_ int, f *manifest.FileMetadata) {
			if _, ok := v.SharedRef(false, f.FileNum); ok {
				m.Shared.Bytes += f.Size
			}
		})
		tables, vlogs := sharedCandidates(v, s.from)
		m.Shared.Pending = len(tables) + len(vlogs)
	}
	if d.bgErr != nil {
		m.BackgroundE = d.bgErr.Error()
	}
	d.mu.Unlock()

	m.WAL.BytesWritten = d.stats.walBytes.Load()
	m.Flush.Count = d.stats.flushes.Load()
	m.Flush.BytesWritten = d.stats.flushBytes.Load()
	m.Ingest.Count = d.stats.ingests.Load()
	m.Ingest.BytesWritten = d.stats.ingestBytes.Load()
	m.Compact.Count = d.stats.compactions.Load()
	m.Compact.BytesRead = d.stats.compactInBytes.Load()
	m.Compact.Expired = d.stats.expired.Load()
	m.Compact.ValueLogReads = d.stats.compactVlogReads.Load()
	m.Compact.BytesWritten = d.stats.compactOutBytes.Load()
	m.UserBytes = d.stats.userBytes.Load()
	m.ValueLogs.BytesWritten = d.stats.vlogBytes.Load()
	if m.UserBytes > 0 {
		m.WriteAmp = float64(m.WAL.BytesWritten+m.Flush.BytesWritten+m.Compact.BytesWritten+m.ValueLogs.BytesWritten) / float64(m.UserBytes)
	}
	m.WriteStalls = d.stats.writeStalls.Load()
	m.StallDuration = time.Duration(d.stats.stallNanos.Load())
	m.SlowdownDuration = time.Duration(d.stats.slowdownNanos.Load())
	m.Latency.Commit = d.stats.latency.commit.snapshot()
	m.Latency.CommitWait = d.stats.latency.commitWait.snapshot()
	m.Latency.WALSync = d.stats.latency.walSync.snapshot()
	m.Latency.Get = d.stats.latency.get.snapshot()
	m.Latency.Has = d.stats.latency.has.snapshot()
	m.ValueLogs.Reads = d.stats.vlogReads.Load()
	m.PrefixFilter.Checked = d.stats.prefixChecked.Load()
	m.PrefixFilter.Skipped = d.stats.prefixSkipped.Load()
	m.Latency.IterSeek = d.stats.latency.iterSeek.snapshot()
	if d.cache != nil {
		m.BlockCache = d.cache.Metrics()
	}
	m.TablesOpen = d.tableCache.size()
	m.LearnedIndex = d.tableCache.learnedMetrics()
	m.ValueLogs.Open = d.vlogs.Open()
	m.VisibleSeq = d.visibleSeq.Load()
	if s := d.shared; s != nil {
		m.Shared.Stats = s.files.Stats()
		m.Shared.Reconciled = s.reconciled.Load()
		s.mu.Lock()
		m.Shared.Failures = s.errs
		s.mu.Unlock()
		if s.warmDone != nil {
			select {
			case <-s.warmDone:
			default:
				m.Shared.Warming = true
			}
		}
	}
	return m
}

// maxValueLogRows bounds the value logs String lists.
const maxValueLogRows = 10

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
	fmt.Fprintf(&b, "value logs: %d files, %s, %d values (%s), live %s, garbage %s, written %s, %d open, %d reads\n",
		m.ValueLogs.Files, humanBytes(m.ValueLogs.Bytes), m.ValueLogs.Records, humanBytes(m.ValueLogs.ValueBytes),
		humanBytes(m.ValueLogs.Live), humanBytes(m.ValueLogs.Garbage), humanBytes(m.ValueLogs.BytesWritten), m.ValueLogs.Open, m.ValueLogs.Reads)
	if len(m.ValueLogs.List) > 0 {
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "value log\tsize\tlive\tgarbage\tpointers\tstate\t")
		// The most garbage-laden first, at most maxValueLogRows of them.
		list := slices.Clone(m.ValueLogs.List)
		slices.SortStableFunc(list, func(a, b ValueLogMetrics) int { return cmp.Compare(b.Garbage, a.Garbage) })
		for i, vl := range list {
			if i == maxValueLogRows {
				fmt.Fprintf(tw, "(%d more)\t\t\t\t\t\t\n", len(list)-i)
				break
			}
			pct := 0.0
			if vl.Live+vl.Garbage > 0 {
				pct = 100 * float64(vl.Garbage) / float64(vl.Live+vl.Garbage)
			}
			state := vl.State
			if state == "" {
				state = "-"
			}
			fmt.Fprintf(tw, "%06d.vlog\t%s\t%s\t%.0f%%\t%d\t%s\t\n", vl.FileNum, humanBytes(vl.Size), humanBytes(vl.Live), pct, vl.Pointers, state)
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "gc (%s): %d passes, %d value logs deleted (%s), %d collections (%d in progress, %d draining), %d rewrites, relocated %d values (%s), gc write-amp %.2f, space-amp %.2f\n",
		m.GC.Policy, m.GC.Passes, m.GC.DeletedFiles, humanBytes(m.GC.DeletedBytes), m.GC.Collections, m.GC.InProgress, m.GC.Draining,
		m.GC.Rewrites, m.GC.Relocated, humanBytes(m.GC.RelocatedBytes), m.GC.WriteAmp, m.SpaceAmp)
	fmt.Fprintf(&b, "memtable: %s, %d immutable (%s), memory %s\n",
		humanBytes(uint64(m.MemTable.Size)), m.MemTable.Immutable, humanBytes(uint64(m.MemTable.ImmSize)), humanBytes(uint64(m.MemTable.Memory)))
	if mb := m.MemTable.Budget; mb.Limit > 0 {
		fmt.Fprintf(&b, "write budget: %s of %s in use by all its DBs, this DB %s (%.1f%%), %d writes waited\n",
			humanBytes(uint64(mb.Used)), humanBytes(uint64(mb.Limit)), humanBytes(uint64(mb.Charged)), 100*mb.Share, mb.Waits)
	}
	m.writeAmpTable(&b)
	fmt.Fprintf(&b, "stalls: %d (%s), slowed %s\n", m.WriteStalls, m.StallDuration.Round(time.Millisecond), m.SlowdownDuration.Round(time.Millisecond))
	fmt.Fprintf(&b, "block cache: %s / %s, hit rate %.1f%%\n",
		humanBytes(uint64(max(m.BlockCache.Size, 0))), humanBytes(uint64(max(m.BlockCache.Capacity, 0))), 100*m.BlockCache.HitRate())
	if m.Ingest.Count > 0 {
		fmt.Fprintf(&b, "ingests: %d, tables written %s\n", m.Ingest.Count, humanBytes(m.Ingest.BytesWritten))
	}
	fmt.Fprintf(&b, "learned index: %s\n", m.LearnedIndex)
	if m.Shared.CacheSize != 0 || m.Shared.Tables+m.Shared.ValueLogs > 0 {
		fmt.Fprintf(&b, "shared: %s\n", m.Shared)
	}
	fmt.Fprintf(&b, "tables open: %d, snapshots: %d, visible seq: %d\n", m.TablesOpen, m.Snapshots, m.VisibleSeq)
	m.latencyTable(&b)
	if m.BackgroundE != "" {
		fmt.Fprintf(&b, "background error: %s\n", m.BackgroundE)
	}
	return b.String()
}

// writeAmpTable prints what the DB wrote, part by part, per user byte.
func (m *Metrics) writeAmpTable(b *strings.Builder) {
	per := func(n uint64) string {
		if m.UserBytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(n)/float64(m.UserBytes))
	}
	total := m.WAL.BytesWritten + m.ValueLogs.BytesWritten + m.Flush.BytesWritten + m.Compact.BytesWritten
	fmt.Fprintf(b, "writes: user %s, write-amp %.2f\n", humanBytes(m.UserBytes), m.WriteAmp)
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "written\tbytes\tper user byte\t")
	fmt.Fprintf(tw, "WAL\t%s\t%s\t\n", humanBytes(m.WAL.BytesWritten), per(m.WAL.BytesWritten))
	fmt.Fprintf(tw, "value logs\t%s\t%s\t  of which GC relocated %s\n", humanBytes(m.ValueLogs.BytesWritten), per(m.ValueLogs.BytesWritten),
		humanBytes(m.GC.RelocatedBytes))
	fmt.Fprintf(tw, "flushes\t%s\t%s\t  %d flushes\n", humanBytes(m.Flush.BytesWritten), per(m.Flush.BytesWritten), m.Flush.Count)
	fmt.Fprintf(tw, "compactions\t%s\t%s\t  %d compactions, read %s\n", humanBytes(m.Compact.BytesWritten), per(m.Compact.BytesWritten),
		m.Compact.Count, humanBytes(m.Compact.BytesRead))
	fmt.Fprintf(tw, "total\t%s\t%s\t\n", humanBytes(total), per(total))
	tw.Flush()
}

// latencyTable prints the latency histograms' percentiles.
func (m *Metrics) latencyTable(b *strings.Builder) {
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tcount\tmean\tp50\tp90\tp99\tp99.9\t")
	for _, l := range []struct {
		name string
		h    *LatencyHistogram
	}{{"commit", &m.Latency.Commit}, {"commit wait", &m.Latency.CommitWait}, {"WAL sync", &m.Latency.WALSync}, {"get", &m.Latency.Get}, {"has", &m.Latency.Has}, {"iter seek", &m.Latency.IterSeek}} {
		if l.h.Count == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t-\t\n", l.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", l.name, l.h.Count, fmtLatency(l.h.Mean()), fmtLatency(l.h.Percentile(0.5)),
			fmtLatency(l.h.Percentile(0.9)), fmtLatency(l.h.Percentile(0.99)), fmtLatency(l.h.Percentile(0.999)))
	}
	tw.Flush()
}
