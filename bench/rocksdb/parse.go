package rocksdb

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata/bench"
)

// output is what one db_bench run printed on stdout.
type output struct {
	// From the result line of the benchmark.
	microsPerOp float64 // summed over threads: thread-seconds per op
	opsPerSec   float64 // truncated to an integer by db_bench
	seconds     float64 // wall time, printed with 3 decimals
	ops         int64
	found       int64 // "(found of tried found)", one thread's numbers
	tried       int64
	hasFound    bool
	// "(reads:R merges:M total:T hits:H maxlength:L)" of
	// readrandommergerandom, one thread's numbers.
	mergeReads, merges, mergeHits int64
	hasMerges                     bool

	// hists are the latency histograms by operation ("write", "read",
	// "seek", "delete"), in microseconds.
	hists map[string]*histogram

	// From the "stats" meta-benchmark.
	writes    int64 // "Cumulative writes: ... N keys": keys written since the open
	hasWrites bool
	levels    string // summary for EngineStats

	// assertions is set when db_bench warns that it was built with
	// assertions enabled, which makes RocksDB slower than a release build.
	assertions bool
}

// resultLine matches db_bench's report of a benchmark, e.g.
//
//	readrandom   :       3.097 micros/op 322216 ops/sec 0.006 seconds 2000 operations;   66.4 MB/s (2000 of 2000 found)
var resultLine = regexp.MustCompile(`^(\S+)\s*:\s*([0-9.]+) micros/op (\d+) ops/sec ([0-9.]+) seconds (\d+) operations;(.*)$`)

var levelName = regexp.MustCompile(`^L\d+$`)

var foundMessage = regexp.MustCompile(`\((\d+) of (\d+) found\)`)

// mergeMessage is readrandommergerandom's message, e.g.
//
//	(reads:82 merges:1918 total:2000 hits:81 maxlength:10099)
var mergeMessage = regexp.MustCompile(`\(reads:(\d+) merges:(\d+) total:\d+ hits:(\d+) maxlength:\d+\)`)

// histHeader is the first line of a histogram: "Microseconds per read:".
var histHeader = regexp.MustCompile(`^Microseconds per (\w+):$`)

// bucketLine is a row of a histogram's table:
//
//	(       4,       6 ]      258  12.900%  13.000% ###
var bucketLine = regexp.MustCompile(`^[\[(]\s*(\d+),\s*(\d+)\s*\]\s+(\d+)\s`)

// parseOutput reads the stdout of a db_bench run of benchmark name.
func parseOutput(stdout, name string) (*output, error) {
	out := &output{hists: map[string]*histogram{}}
	lines := strings.Split(stdout, "\n")
	sawResult, sawLevels := false, false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r ")
		if m := resultLine.FindStringSubmatch(line); m != nil && m[1] == name {
			if err := out.parseResult(m); err != nil {
				return nil, fmt.Errorf("db_bench result line %q: %w", line, err)
			}
			sawResult = true
			continue
		}
		if strings.HasPrefix(line, "WARNING: Assertions are enabled") {
			out.assertions = true
			continue
		}
		if m := histHeader.FindStringSubmatch(line); m != nil {
			h, next, err := parseHistogram(lines, i+1)
			if err != nil {
				return nil, fmt.Errorf("db_bench histogram of %s: %w", m[1], err)
			}
			out.hists[m[1]] = h
			i = next - 1
			continue
		}
		if strings.HasPrefix(line, "** Compaction Stats [default] **") && !sawLevels {
			// The first such table is by level; a second one, by priority.
			out.levels = joinSummary(out.levels, levelSummary(lines[i+1:]))
			sawLevels = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Cumulative writes: "); ok && !out.hasWrites {
			n, err := parseWrites(rest)
			if err != nil {
				return nil, fmt.Errorf("db_bench stats line %q: %w", line, err)
			}
			out.writes, out.hasWrites = n, true
			continue
		}
		if (strings.HasPrefix(line, "Blob file count:") && !strings.HasPrefix(line, "Blob file count: 0,")) ||
			strings.HasPrefix(line, "Cumulative compaction:") {
			out.levels = joinSummary(out.levels, compactStatsLine(line))
		}
	}
	if !sawResult {
		return nil, fmt.Errorf("db_bench printed no result line for %s", name)
	}
	return out, nil
}

func (o *output) parseResult(m []string) error {
	var err error
	parse := func(s string) float64 {
		v, e := strconv.ParseFloat(s, 64)
		err = errors.Join(err, e)
		return v
	}
	o.microsPerOp = parse(m[2])
	o.opsPerSec = parse(m[3])
	o.seconds = parse(m[4])
	ops, e := strconv.ParseInt(m[5], 10, 64)
	o.ops = ops
	err = errors.Join(err, e)
	if f := foundMessage.FindStringSubmatch(m[6]); f != nil {
		found, e1 := strconv.ParseInt(f[1], 10, 64)
		tried, e2 := strconv.ParseInt(f[2], 10, 64)
		o.found, o.tried, o.hasFound = found, tried, true
		err = errors.Join(err, e1, e2)
	}
	if f := mergeMessage.FindStringSubmatch(m[6]); f != nil {
		reads, e1 := strconv.ParseInt(f[1], 10, 64)
		merges, e2 := strconv.ParseInt(f[2], 10, 64)
		hits, e3 := strconv.ParseInt(f[3], 10, 64)
		o.mergeReads, o.merges, o.mergeHits, o.hasMerges = reads, merges, hits, true
		err = errors.Join(err, e1, e2, e3)
	}
	return err
}

// wall is the benchmark's wall time. db_bench prints it with three
// decimals, and ops/sec truncated to an integer; n / (ops/sec) is the more
// precise of the two unless throughput is low.
func (o *output) wall() time.Duration {
	bySeconds := time.Duration(o.seconds * float64(time.Second))
	if o.opsPerSec <= 0 || o.ops <= 0 {
		return bySeconds
	}
	byRate := time.Duration(float64(o.ops) / o.opsPerSec * float64(time.Second))
	// Relative error of each: 1/(ops/sec) from truncation, 0.0005 s over
	// the printed seconds from rounding.
	if o.seconds > 0 && 0.0005/o.seconds < 1/o.opsPerSec {
		return bySeconds
	}
	return byRate
}

// histogram is one of db_bench's latency histograms (microseconds).
type histogram struct {
	count       int64
	min, max    float64
	percentiles map[string]float64 // "P50", "P75", "P99", "P99.9", "P99.99"
	buckets     []bucket
}

// bucket is a row of the table: count values in (lo, hi].
type bucket struct {
	lo, hi float64
	count  int64
}

// parseHistogram reads the lines after a "Microseconds per X:" header up to
// the blank line that ends the table, returning the index after it.
func parseHistogram(lines []string, i int) (*histogram, int, error) {
	h := &histogram{percentiles: map[string]float64{}}
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" {
			break
		}
		var err error
		switch {
		case strings.HasPrefix(line, "Count:"):
			fields := strings.Fields(line)
			h.count, err = strconv.ParseInt(fields[1], 10, 64)
		case strings.HasPrefix(line, "Min:"):
			kv := pairs(line)
			h.min, err = strconv.ParseFloat(kv["Min"], 64)
			if err == nil {
				h.max, err = strconv.ParseFloat(kv["Max"], 64)
			}
		case strings.HasPrefix(line, "Percentiles:"):
			for k, v := range pairs(strings.TrimPrefix(line, "Percentiles:")) {
				f, e := strconv.ParseFloat(v, 64)
				err = errors.Join(err, e)
				h.percentiles[k] = f
			}
		case strings.HasPrefix(line, "---"):
		default:
			m := bucketLine.FindStringSubmatch(line)
			if m == nil {
				return nil, i, fmt.Errorf("unexpected line %q", line)
			}
			lo, e1 := strconv.ParseFloat(m[1], 64)
			hi, e2 := strconv.ParseFloat(m[2], 64)
			n, e3 := strconv.ParseInt(m[3], 10, 64)
			err = errors.Join(e1, e2, e3)
			h.buckets = append(h.buckets, bucket{lo, hi, n})
		}
		if err != nil {
			return nil, i, fmt.Errorf("line %q: %w", line, err)
		}
	}
	if _, ok := h.percentiles["P50"]; !ok {
		return nil, i, errors.New("no Percentiles line")
	}
	return h, i, nil
}

// pairs splits "K1: v1 K2: v2 ..." into a map.
func pairs(s string) map[string]string {
	kv := map[string]string{}
	fields := strings.Fields(s)
	for j := 0; j+1 < len(fields); j += 2 {
		kv[strings.TrimSuffix(fields[j], ":")] = fields[j+1]
	}
	return kv
}

// percentile computes the p-th percentile from the bucket table the way
// RocksDB's HistogramStat::Percentile does for the values it prints:
// linear interpolation inside the bucket where the running count reaches
// p% of the total, clamped to [min, max]. (The table omits empty buckets,
// which does not change the result.)
func (h *histogram) percentile(p float64) float64 {
	total := h.count
	if total == 0 {
		for _, b := range h.buckets {
			total += b.count
		}
	}
	// The same expression as RocksDB's, so it rounds alike.
	threshold := float64(total) * (p / 100.0)
	var cum int64
	for _, b := range h.buckets {
		left := cum
		cum += b.count
		if float64(cum) >= threshold {
			pos := 0.0
			if b.count != 0 {
				pos = (threshold - float64(left)) / float64(b.count)
			}
			r := b.lo + (b.hi-b.lo)*pos
			return min(max(r, h.min), h.max)
		}
	}
	return h.max
}

// get returns a printed percentile ("P50", "P99", "P99.9"), or computes it
// from the table when it was not printed.
func (h *histogram) get(name string, p float64) float64 {
	if v, ok := h.percentiles[name]; ok {
		return v
	}
	return h.percentile(p)
}

// micros converts db_bench's microseconds to a Duration.
func micros(us float64) time.Duration {
	return time.Duration(us*1000 + 0.5)
}

// parseWrites reads the number of keys from the rest of RocksDB's
// "Cumulative writes: 214K writes, 214K keys, ..." line. RocksDB prints
// counts of 10000 and more rounded down to thousands (K), millions (M) or
// billions (G); the middle of the rounding interval is returned.
func parseWrites(rest string) (int64, error) {
	for _, part := range strings.Split(rest, ",") {
		fields := strings.Fields(part)
		if len(fields) == 2 && fields[1] == "keys" {
			return parseHuman(fields[0])
		}
	}
	return 0, errors.New("no key count")
}

// parseHuman parses RocksDB's NumberToHumanString: "9999", "12K", "3M".
func parseHuman(s string) (int64, error) {
	unit := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		unit = 1_000
	case strings.HasSuffix(s, "M"):
		unit = 1_000_000
	case strings.HasSuffix(s, "G"):
		unit = 1_000_000_000
	}
	if unit > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("count %q: %w", s, err)
	}
	if unit > 1 {
		return n*unit + unit/2, nil
	}
	return n, nil
}

// levelSummary condenses the table after "** Compaction Stats [default] **":
//
//	Level    Files   Size     Score Read(GB) ...
//	-------------------------------------------...
//	  L0      1/0    1.90 MB   0.2      0.0 ...
//	 Sum      1/0    1.90 MB   0.0      0.0 ...
//
// into "L0: 1 files, 1.90 MB" per level holding files, or "no sstables".
func levelSummary(lines []string) string {
	var parts []string
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			break
		}
		if len(fields) < 4 || !levelName.MatchString(fields[0]) {
			continue
		}
		files, _, _ := strings.Cut(fields[1], "/")
		if files == "0" {
			continue // a level that had compactions but holds no file now
		}
		parts = append(parts, fmt.Sprintf("%s: %s files, %s %s", fields[0], files, fields[2], fields[3]))
	}
	if len(parts) == 0 {
		return "no sstables"
	}
	return strings.Join(parts, "; ")
}

// compactStatsLine shortens the blob and compaction lines of the stats:
// "Blob file count: 1, total size: 0.1 GB, garbage size: 0.0 GB, space amp:
// 1.0" is kept whole; "Cumulative compaction: 0.06 GB write, 50.59 MB/s
// write, 0.00 GB read, ..." becomes "compactions: 0.06 GB written, 0.00 GB
// read".
func compactStatsLine(line string) string {
	rest, ok := strings.CutPrefix(line, "Cumulative compaction: ")
	if !ok {
		return strings.TrimSpace(line)
	}
	parts := strings.Split(rest, ",")
	if len(parts) < 3 {
		return strings.TrimSpace(line)
	}
	w := strings.TrimSuffix(strings.TrimSpace(parts[0]), " write")
	r := strings.TrimSuffix(strings.TrimSpace(parts[2]), " read")
	return fmt.Sprintf("compactions since open: %s written, %s read", w, r)
}

func joinSummary(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// parseReport reads db_bench's --report_file: a "secs_elapsed,interval_qps"
// header, then one line per interval. Despite its name the second column is
// the number of operations done in the interval (of every thread, the
// background writer included), so it is divided by the interval. A last
// line without its newline (still being written) is ignored.
func parseReport(data string, interval int) ([]bench.Sample, error) {
	data = data[:strings.LastIndexByte(data, '\n')+1]
	if data == "" {
		return nil, nil
	}
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "secs_elapsed") {
		return nil, fmt.Errorf("report file starts with %q, not its header", lines[0])
	}
	var samples []bench.Sample
	for _, line := range lines[1:] {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		secs, count, ok := strings.Cut(line, ",")
		if !ok {
			return nil, fmt.Errorf("report line %q has no comma", line)
		}
		s, err1 := strconv.ParseInt(secs, 10, 64)
		n, err2 := strconv.ParseInt(count, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("report line %q: %w", line, err)
		}
		samples = append(samples, bench.Sample{
			Elapsed:   time.Duration(s) * time.Second,
			OpsPerSec: float64(n) / float64(max(interval, 1)),
		})
	}
	return samples, nil
}

// reportOps is the number of operations a report file counts so far.
func reportOps(samples []bench.Sample, interval int) int64 {
	var n float64
	for _, s := range samples {
		n += s.OpsPerSec * float64(max(interval, 1))
	}
	return int64(n + 0.5)
}

// versionLine is db_bench's header line naming RocksDB's version.
var versionLine = regexp.MustCompile(`RocksDB:\s+version\s+(\S+)`)

// parseVersion returns the RocksDB version db_bench printed in out, or ""
// when it printed none.
func parseVersion(out string) string {
	if m := versionLine.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
