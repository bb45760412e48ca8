package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-db/strata/bench"
)

// groupDigits writes a non-negative integer with thousands separators.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtRate writes a throughput for the table: whole numbers with separators,
// one decimal below 100, "-" for nothing.
func fmtRate(f float64) string {
	f = finite(f)
	switch {
	case f <= 0:
		return "-"
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return groupDigits(int64(math.Round(f)))
	}
}

// fmtMBps writes a bandwidth in MB/s: one decimal below 1000, "-" for
// nothing.
func fmtMBps(f float64) string {
	f = finite(f)
	switch {
	case f <= 0:
		return "-"
	case f < 1000:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return groupDigits(int64(math.Round(f)))
	}
}

// fmtCompact writes a number in at most four significant characters with an
// SI suffix: 950, 48.8k, 1.23M.
func fmtCompact(f float64) string {
	f = finite(f)
	neg := f < 0
	if neg {
		f = -f
	}
	var s string
	switch {
	case f == 0:
		s = "0"
	case f >= 1e9:
		s = trimZeros(fmt.Sprintf("%.3g", f/1e9)) + "G"
	case f >= 1e6:
		s = trimZeros(fmt.Sprintf("%.3g", f/1e6)) + "M"
	case f >= 1e3:
		s = trimZeros(fmt.Sprintf("%.3g", f/1e3)) + "k"
	case f >= 1:
		s = trimZeros(fmt.Sprintf("%.3g", f))
	default:
		s = trimZeros(fmt.Sprintf("%.2f", f))
	}
	if neg {
		return "-" + s
	}
	return s
}

// trimZeros drops trailing zeros of a decimal fraction, and its point; a
// number in exponent notation is returned as it is.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") || strings.ContainsAny(s, "eE") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// fmtLatency writes a latency in the unit that suits it: 850ns, 12.3µs,
// 456µs, 1.23ms, 2.50s; "-" for none.
func fmtLatency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", int64(d))
	case d < time.Millisecond:
		return scaled(float64(d)/1e3) + "µs"
	case d < time.Second:
		return scaled(float64(d)/1e6) + "ms"
	default:
		return scaled(float64(d)/1e9) + "s"
	}
}

// scaled writes a value in [1, 1000) with three significant digits.
func scaled(f float64) string {
	switch {
	case f < 10:
		return strconv.FormatFloat(f, 'f', 2, 64)
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
}

// fmtMiB writes a byte count in MiB.
func fmtMiB(n int64) string {
	if n <= 0 {
		return "0"
	}
	m := float64(n) / (1 << 20)
	if m < 10 {
		return strconv.FormatFloat(m, 'f', 1, 64)
	}
	return groupDigits(int64(math.Round(m)))
}

// fmtMiBOrDash writes a byte count in MiB, "-" for none (not measured).
func fmtMiBOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmtMiB(n)
}

// fmtSettle writes how long a settle took, "-" for none.
func fmtSettle(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmtElapsed(d)
}

// fmtAmp writes an amplification factor; "-" when undefined (0).
func fmtAmp(f float64) string {
	f = finite(f)
	if f <= 0 {
		return "-"
	}
	if f >= 100 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// fmtRatio writes a throughput ratio: 1.62x, 12.3x, 140x.
func fmtRatio(f float64) string {
	f = finite(f)
	switch {
	case f < 10:
		return strconv.FormatFloat(f, 'f', 2, 64) + "x"
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64) + "x"
	default:
		return strconv.FormatFloat(f, 'f', 0, 64) + "x"
	}
}

// fmtElapsed writes a wall-clock duration briefly: 4.1s, 42s, 3m07s, 1h02m.
func fmtElapsed(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= 100*time.Hour:
		return ">99h"
	}
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s := int(d.Seconds())
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		m := int(d.Minutes())
		return fmt.Sprintf("%dh%02dm", m/60, m%60)
	}
}

// fmtSize writes a configured size in the largest binary unit that divides
// it: 64 MiB, 1 KiB, 1000 B.
func fmtSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n != 0 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// specLine describes the workload of a run.
func specLine(s *bench.Spec) string {
	parts := []string{
		"num " + groupDigits(s.Num),
	}
	if s.Reads > 0 && s.Reads != s.Num {
		parts = append(parts, "reads "+groupDigits(s.Reads))
	}
	parts = append(parts,
		fmt.Sprintf("key %d B", s.KeySize),
		"value "+s.Value.String(),
		fmt.Sprintf("threads %d", s.Threads))
	if s.SeekNexts > 0 {
		parts = append(parts, fmt.Sprintf("seek nexts %d", s.SeekNexts))
	}
	if s.ZipfTheta > 0 {
		parts = append(parts, "zipf "+strconv.FormatFloat(s.ZipfTheta, 'g', -1, 64))
	}
	if n := s.Rounds(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d overwrite rounds", n))
	}
	if s.KeyDist != "" && s.KeyDist != bench.KeyUniform {
		parts = append(parts, "overwrite and list keys "+s.KeyDist)
	}
	if s.ListKeys > 0 {
		parts = append(parts, fmt.Sprintf("%s lists, %d%% list reads", groupDigits(s.ListKeys), s.ListReadPercent))
	}
	if s.TTL > 0 {
		parts = append(parts, "ttl "+s.TTL.String())
	}
	if len(s.GCPolicies) > 0 {
		parts = append(parts, "strata gc policies "+strings.Join(s.GCPolicies, " "))
	}
	if s.Config.GCBudget > 0 && slices.Contains(s.Engines, "strata/cost") {
		parts = append(parts, "gc budget "+strconv.FormatFloat(s.Config.GCBudget, 'g', -1, 64))
	}
	parts = append(parts, fmt.Sprintf("seed %d", s.Seed))
	if s.StoreLatency > 0 {
		parts = append(parts, "store latency "+s.StoreLatency.String())
	}
	if s.Repeat > 1 {
		parts = append(parts, fmt.Sprintf("median of %d runs", s.Repeat))
	}
	return strings.Join(parts, ", ")
}

// settingsLine describes the engine settings every engine received.
func settingsLine(c *bench.Config) string {
	var parts []string
	if c.ValueThreshold > 0 {
		parts = append(parts, "value threshold "+fmtSize(int64(c.ValueThreshold)))
	}
	if c.MemTableSize > 0 {
		parts = append(parts, "memtable "+fmtSize(c.MemTableSize))
	}
	if c.CacheSize > 0 {
		parts = append(parts, "cache "+fmtSize(c.CacheSize))
	}
	if c.Compression != "" {
		parts = append(parts, "compression "+c.Compression)
	}
	if c.SharedCache > 0 {
		parts = append(parts, "shared-file cache "+fmtSize(c.SharedCache))
	}
	if c.SharedPartSize > 0 {
		parts = append(parts, "shared-file parts "+fmtSize(c.SharedPartSize))
	}
	switch {
	case c.DisableWAL:
		parts = append(parts, "WAL off")
	case c.Sync:
		parts = append(parts, "WAL on, sync")
	default:
		parts = append(parts, "WAL on, no sync")
	}
	return strings.Join(parts, ", ")
}

// machineLine describes where a run happened.
func machineLine(m *bench.Machine) string {
	var parts []string
	if m.OS != "" || m.Arch != "" {
		parts = append(parts, m.OS+"/"+m.Arch)
	}
	if m.CPUs > 0 {
		cpus := fmt.Sprintf("%d CPUs", m.CPUs)
		if m.CPUs == 1 {
			cpus = "1 CPU"
		}
		if m.CPUModel != "" {
			cpus += " (" + m.CPUModel + ")"
		}
		parts = append(parts, cpus)
	} else if m.CPUModel != "" {
		parts = append(parts, m.CPUModel)
	}
	if m.MemoryGiB > 0 {
		parts = append(parts, fmt.Sprintf("%d GiB RAM", m.MemoryGiB))
	}
	if m.GoVersion != "" {
		parts = append(parts, m.GoVersion)
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// width is the number of terminal cells s takes (one per rune).
func width(s string) int { return utf8.RuneCountInString(s) }

// truncate shortens s to at most n runes, ending it with "..." when cut.
func truncate(s string, n int) string {
	if width(s) <= n {
		return s
	}
	if n <= 3 {
		return string([]rune(s)[:max(n, 0)])
	}
	return string([]rune(s)[:n-3]) + "..."
}

// spreadOf writes the minimum and maximum of a figure over repeated runs,
// as "min-max" (one value when they are equal), or "" when the result has
// no spread for it.
func spreadOf(res *bench.Result, key string, format func(float64) string) string {
	return spreadIn(res.Spread, key, format)
}

// spreadIn is spreadOf for a spread of any origin (a Result's, a Round's).
func spreadIn(spread map[string]bench.Range, key string, format func(float64) string) string {
	r, ok := spread[key]
	if !ok {
		return ""
	}
	lo, hi := format(r.Min), format(r.Max)
	if lo == hi {
		return lo
	}
	// A unit both share is written once: 11.1-13.6µs, 45-55k.
	unit := strings.TrimLeft(hi, "0123456789.,")
	if unit != "" && unit != hi && strings.HasSuffix(lo, unit) && strings.TrimSuffix(lo, unit) != "" {
		lo = strings.TrimSuffix(lo, unit)
	}
	return lo + "-" + hi
}

// fmtNs writes a latency given in nanoseconds.
func fmtNs(f float64) string { return fmtLatency(time.Duration(finite(f))) }

// fmtMiBf writes a byte count, given as a float, in MiB.
func fmtMiBf(f float64) string { return fmtMiB(int64(finite(f))) }

// versionsLine names each engine's version, as its results report it:
// "strata devel, pebble v2.1.7, rocksdb 7.8.3"; "" when none does.
func versionsLine(m *model) string {
	var parts []string
	for _, e := range m.engines {
		if v := m.version(e); v != "" {
			parts = append(parts, e+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// fmtNsSettle writes a settle time given in nanoseconds.
func fmtNsSettle(f float64) string { return fmtSettle(time.Duration(finite(f))) }

// fmtNsElapsed writes a duration given in nanoseconds.
func fmtNsElapsed(f float64) string { return fmtElapsed(time.Duration(finite(f))) }
