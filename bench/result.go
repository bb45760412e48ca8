package bench

import (
	"time"
)

// Result is what one benchmark on one engine measured.
type Result struct {
	Engine    string `json:"engine"`
	Benchmark string `json:"benchmark"`
	// Round numbers the overwrite rounds of a run from 1 (see
	// Spec.Rounds); 0 for every other benchmark.
	Round int `json:"round,omitempty"`
	// Skipped is set when the engine or benchmark could not run here; Note
	// says why.
	Skipped bool   `json:"skipped,omitempty"`
	Note    string `json:"note,omitempty"`

	Ops      int64         `json:"ops"`
	Duration time.Duration `json:"duration_ns"`
	// OpsPerSec counts operations; for seekrandom and ycsb-e, RowsPerSec
	// counts the rows the scans read.
	OpsPerSec  float64 `json:"ops_per_sec"`
	RowsPerSec float64 `json:"rows_per_sec,omitempty"`
	// MBPerSec is the key and value bytes moved per second (written for
	// writes, read for reads), in MB (10^6 bytes).
	MBPerSec float64 `json:"mb_per_sec"`
	// Latency percentiles of single operations.
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	// PerOp is the latency of each kind of operation of a mix (YCSB's
	// reads and writes, say); nil for a benchmark of one kind. With
	// repetitions it is the median-throughput run's.
	PerOp []OpLatency `json:"per_op,omitempty"`

	// Found counts reads that found their key, out of Reads attempted.
	Found int64 `json:"found,omitempty"`
	Reads int64 `json:"reads,omitempty"`

	// UserBytes is the key and value bytes written by the benchmark.
	UserBytes int64 `json:"user_bytes"`
	// DiskWritten is the bytes the process (or db_bench) wrote to storage
	// during the benchmark, from its own I/O accounting.
	DiskWritten int64 `json:"disk_written"`
	// WriteAmp is DiskWritten / UserBytes (0 when nothing was written).
	WriteAmp float64 `json:"write_amp"`
	// EngineWritten is what the engine itself counts as written during the
	// benchmark, for engines that count (see WriteCounter; what each count
	// covers is said there); EngineWriteAmp is it over UserBytes. 0 for
	// engines without a count.
	EngineWritten  int64   `json:"engine_written,omitempty"`
	EngineWriteAmp float64 `json:"engine_write_amp,omitempty"`
	// DiskSize is the size of the database directory after the benchmark;
	// LiveBytes the key and value bytes of the live keys; SpaceAmp their
	// ratio.
	DiskSize  int64   `json:"disk_size"`
	LiveBytes int64   `json:"live_bytes"`
	SpaceAmp  float64 `json:"space_amp"`
	// DiskSizeBeforeSettle is the size of the database directory right
	// after a writing benchmark's last operation, before the runner waited
	// for the engine's background work (Settler), and SpaceAmpBeforeSettle
	// it over LiveBytes; DiskSize is measured after the settle and the
	// close. 0 when not measured (db_bench settles inside its own process).
	DiskSizeBeforeSettle int64   `json:"disk_size_before_settle,omitempty"`
	SpaceAmpBeforeSettle float64 `json:"space_amp_before_settle,omitempty"`
	// Settle is how long the runner waited for the engine's background
	// work after the benchmark (not part of Duration).
	Settle time.Duration `json:"settle_ns,omitempty"`
	// OpenSettle is how long the runner waited, after opening the engine
	// and before the benchmark started, for background work the open left
	// (a flush of writes recovered from the log, the compactions it
	// triggers; not part of Duration, its writes charged to the benchmark
	// as the close's are).
	OpenSettle time.Duration `json:"open_settle_ns,omitempty"`

	// Timeline is throughput sampled every Spec.ReportInterval.
	Timeline []Sample `json:"timeline,omitempty"`
	// Counters are counts the engine keeps of events of interest during
	// the benchmark (see Counter), by name; with several runs, the largest
	// of each over the runs.
	Counters map[string]int64 `json:"counters,omitempty"`
	// EngineStats is the engine's own description of its state afterwards.
	EngineStats string `json:"engine_stats,omitempty"`
	// EngineVersion is the engine's version: its module's from the
	// binary's build information (Go engines), or what db_bench printed.
	EngineVersion string `json:"engine_version,omitempty"`

	// Latency is the histogram the percentiles come from: its non-empty
	// buckets, ascending (db_bench's own for the RocksDB engines).
	Latency []LatencyBucket `json:"latency_buckets,omitempty"`

	// Runs is the number of repetitions this result sums up (Spec.Repeat;
	// omitted for one). With several, every figure above is the median of
	// the runs', Spread holds each figure's minimum and maximum, Timeline
	// and EngineStats are those of the run of median throughput, and
	// Latency adds up every run's buckets.
	Runs   int              `json:"runs,omitempty"`
	Spread map[string]Range `json:"spread,omitempty"`

	// StateBackend is what the statebackend workload measured besides
	// the throughput of its overwrites (with repetitions, the run of
	// median throughput's); nil for other benchmarks.
	StateBackend *StateBackendResult `json:"statebackend,omitempty"`
}

// LatencyBucket counts the operations that took [Lower, Upper).
type LatencyBucket struct {
	Lower time.Duration `json:"lower_ns"`
	Upper time.Duration `json:"upper_ns"`
	Count int64         `json:"count"`
}

// Range is the smallest and largest value of a figure over repetitions.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Sample is the throughput of one interval.
type Sample struct {
	Elapsed   time.Duration `json:"elapsed_ns"` // end of the interval since the benchmark started
	OpsPerSec float64       `json:"ops_per_sec"`
	// Threshold is the engine's separation threshold at the end of the
	// interval, for engines that report one (ThresholdReporter); 0 unset.
	Threshold int `json:"threshold,omitempty"`
}

// The floor of a comparable benchmark phase: one that took less than
// MinPhaseDuration or ran fewer than MinPhaseOps operations measured start-up
// and noise more than the engine. Its figures are reported, marked as too
// short, and left out of every ratio between engines (TooShort).
const (
	MinPhaseDuration = time.Second
	MinPhaseOps      = 1000
)

// TooShort reports whether the result ran but fell under the floor
// (MinPhaseDuration, MinPhaseOps); with repetitions, by its median
// duration.
func (r *Result) TooShort() bool {
	return !r.Skipped && (r.Duration < MinPhaseDuration || r.Ops < MinPhaseOps)
}

// Finish derives the rates and ratios from the raw counts; movedBytes is
// the key and value bytes the benchmark wrote or read, for MB/s.
func (r *Result) Finish(movedBytes int64) {
	if s := r.Duration.Seconds(); s > 0 {
		r.OpsPerSec = float64(r.Ops) / s
		r.MBPerSec = float64(movedBytes) / s / 1e6
	}
	if r.UserBytes > 0 {
		r.WriteAmp = float64(r.DiskWritten) / float64(r.UserBytes)
	}
	if r.UserBytes > 0 && r.EngineWritten > 0 {
		r.EngineWriteAmp = float64(r.EngineWritten) / float64(r.UserBytes)
	}
	if r.LiveBytes > 0 {
		r.SpaceAmp = float64(r.DiskSize) / float64(r.LiveBytes)
		r.SpaceAmpBeforeSettle = float64(r.DiskSizeBeforeSettle) / float64(r.LiveBytes)
	}
}

// Report is a whole run: the spec, the machine and every result.
type Report struct {
	Spec    Spec      `json:"spec"`
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	Results []Result  `json:"results"`
	// Repeats are the results of each repetition (Spec.Repeat), when there
	// were several; Results sum them up.
	Repeats [][]Result `json:"repeats,omitempty"`
	// Rounds are the overwrite rounds (Spec.Rounds) as one series per
	// engine, in engine order; empty when the run had no rounds.
	Rounds []RoundSeries `json:"rounds,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	MemoryGiB int    `json:"memory_gib,omitempty"`
}

// OpLatency is the latency of one kind of operation in a mix: "read"
// (point reads), "write" (sets, updates, inserts, deletes) or "scan".
type OpLatency struct {
	Op    string        `json:"op"`
	Count int64         `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
}
