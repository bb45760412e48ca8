package rocksdb

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

// sampleSpec is the default comparison: 50,000 keys of 16 bytes, 4 KiB
// values, one thread, seeks with 100 nexts, 1 KiB value threshold.
func sampleSpec() *bench.Spec {
	return &bench.Spec{
		Benchmarks:     []string{bench.FillRandom, bench.ReadRandom, bench.Overwrite, bench.SeekRandom},
		Num:            50_000,
		Reads:          50_000,
		KeySize:        16,
		Value:          bench.ValueDist{Kind: "fixed", Size: 4096},
		Threads:        1,
		SeekNexts:      100,
		Seed:           1,
		ReportInterval: time.Second,
		Config: bench.Config{
			ValueThreshold: 1024,
			MemTableSize:   64 << 20,
			CacheSize:      64 << 20,
			Compression:    "none",
		},
	}
}

// sampleCommon is what commonArgs gives for sampleSpec without blobs.
var sampleCommon = []string{
	"--key_size=16",
	"--value_size=4096",
	"--num=50000",
	"--compression_type=none",
	"--compression_ratio=1",
	"--write_buffer_size=67108864",
	"--max_write_buffer_number=2",
	"--cache_size=67108864",
	"--cache_index_and_filter_blocks=false",
	"--bloom_bits=10",
	"--level_compaction_dynamic_level_bytes=true",
	"--max_background_jobs=2",
	"--disable_wal=false",
	"--sync=false",
	"--avoid_flush_during_recovery=true",
	"--histogram=true",
	"--statistics=false",
	"--progress_reports=false",
	"--report_interval_seconds=1",
}

var sampleBlob = []string{
	"--enable_blob_files=true",
	"--min_blob_size=1024",
	"--blob_compression_type=none",
	"--enable_blob_garbage_collection=true",
}

func concat(parts ...[]string) []string { return slices.Concat(parts...) }

func TestRunArgs(t *testing.T) {
	cases := []struct {
		name  string
		spec  func(*bench.Spec)
		bench string
		index int
		blob  bool
		fresh bool
		want  []string
	}{
		{
			name: "rocksdb fillrandom creates the database", bench: bench.FillRandom, index: 0, fresh: true,
			want: []string{
				"--benchmarks=filluniquerandom,waitforcompaction,stats",
				"--db=d/db",
				"--use_existing_db=false",
				"--threads=1",
				"--seed=1000004",
				"--key_size=16",
				"--value_size=4096",
				"--num=50000",
				"--compression_type=none",
				"--compression_ratio=1",
				"--write_buffer_size=67108864",
				"--max_write_buffer_number=2",
				"--cache_size=67108864",
				"--cache_index_and_filter_blocks=false",
				"--bloom_bits=10",
				"--level_compaction_dynamic_level_bytes=true",
				"--max_background_jobs=2",
				"--disable_wal=false",
				"--sync=false",
				"--avoid_flush_during_recovery=true",
				"--histogram=true",
				"--statistics=false",
				"--progress_reports=false",
				"--report_interval_seconds=1",
				"--report_file=d/reports/00-fillrandom.csv",
			},
		},
		{
			name: "rocksdb readrandom", bench: bench.ReadRandom, index: 1,
			want: concat([]string{"--benchmarks=readrandom,stats", "--db=d/db", "--use_existing_db=true",
				"--threads=1", "--seed=1000105"}, sampleCommon,
				[]string{"--report_file=d/reports/01-readrandom.csv", "--reads=50000"}),
		},
		{
			name: "rocksdb overwrite", bench: bench.Overwrite, index: 2,
			want: concat([]string{"--benchmarks=overwrite,waitforcompaction,stats", "--db=d/db", "--use_existing_db=true",
				"--threads=1", "--seed=1000206"}, sampleCommon,
				[]string{"--report_file=d/reports/02-overwrite.csv", "--writes=50000"}),
		},
		{
			// ceil(50000 / 101) = 496 seeks, each reading 101 rows.
			name: "rocksdb seekrandom", bench: bench.SeekRandom, index: 3,
			want: concat([]string{"--benchmarks=seekrandom,stats", "--db=d/db", "--use_existing_db=true",
				"--threads=1", "--seed=1000307"}, sampleCommon,
				[]string{"--report_file=d/reports/03-seekrandom.csv", "--reads=496", "--seek_nexts=101"}),
		},
		{
			name: "rocksdb-blob fillrandom", bench: bench.FillRandom, index: 0, blob: true, fresh: true,
			want: concat([]string{"--benchmarks=filluniquerandom,waitforcompaction,stats", "--db=d/db", "--use_existing_db=false",
				"--threads=1", "--seed=1000004"}, sampleCommon, sampleBlob,
				[]string{"--report_file=d/reports/00-fillrandom.csv"}),
		},
		{
			name: "rocksdb-blob readwhilewriting, 2 readers, uniform values, snappy, no WAL, sync",
			spec: func(s *bench.Spec) {
				s.Threads = 2
				s.Reads = 1000
				s.Value = bench.ValueDist{Kind: "uniform", Min: 100, Max: 8000}
				s.Config.Compression = "snappy"
				s.Config.DisableWAL = true
				s.Config.Sync = true
				s.ReportInterval = 2500 * time.Millisecond
				s.Seed = 7
			},
			bench: bench.ReadWhileWriting, index: 4, blob: true,
			want: []string{
				"--benchmarks=readwhilewriting,waitforcompaction,stats",
				"--db=d/db",
				"--use_existing_db=true",
				"--threads=2",
				"--seed=7000426",
				"--key_size=16",
				"--value_size=4050",
				"--value_size_distribution_type=uniform",
				"--value_size_min=100",
				"--value_size_max=8000",
				"--num=50000",
				"--compression_type=snappy",
				"--compression_ratio=1",
				"--write_buffer_size=67108864",
				"--max_write_buffer_number=2",
				"--cache_size=67108864",
				"--cache_index_and_filter_blocks=false",
				"--bloom_bits=10",
				"--level_compaction_dynamic_level_bytes=true",
				"--max_background_jobs=2",
				"--disable_wal=true",
				"--sync=true",
				"--avoid_flush_during_recovery=true",
				"--histogram=true",
				"--statistics=false",
				"--progress_reports=false",
				"--report_interval_seconds=3",
				"--enable_blob_files=true",
				"--min_blob_size=1024",
				"--blob_compression_type=snappy",
				"--enable_blob_garbage_collection=true",
				"--report_file=d/reports/04-readwhilewriting.csv",
				"--reads=1000",
			},
		},
		{
			name: "rocksdb readseq: one full scan", bench: bench.ReadSeq, index: 5,
			want: concat([]string{"--benchmarks=readseq,stats", "--db=d/db", "--use_existing_db=true",
				"--threads=1", "--seed=1000509"}, sampleCommon,
				[]string{"--report_file=d/reports/05-readseq.csv", "--reads=50000"}),
		},
		{
			name: "rocksdb fillseq later on a fresh database", bench: bench.FillSeq, index: 6, fresh: true,
			want: concat([]string{"--benchmarks=fillseq,waitforcompaction,stats", "--db=d/db", "--use_existing_db=false",
				"--threads=1", "--seed=1000610"}, sampleCommon,
				[]string{"--report_file=d/reports/06-fillseq.csv"}),
		},
		{
			name: "rocksdb deleterandom", bench: bench.DeleteRandom, index: 7,
			want: concat([]string{"--benchmarks=deleterandom,waitforcompaction,stats", "--db=d/db", "--use_existing_db=true",
				"--threads=1", "--seed=1000711"}, sampleCommon,
				[]string{"--report_file=d/reports/07-deleterandom.csv", "--deletes=50000"}),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := sampleSpec()
			if c.spec != nil {
				c.spec(spec)
			}
			p := planFor(spec, c.bench)
			require.NotEmpty(t, p.dbBench)
			report := "d/reports/" + twoDigits(c.index) + "-" + c.bench + ".csv"
			got := runArgs(spec, c.blob, p, "d/db", report, runSeed(spec, c.index), c.fresh)
			require.Equal(t, c.want, got)
		})
	}
}

func twoDigits(i int) string { return string([]byte{'0' + byte(i/10), '0' + byte(i%10)}) }

func TestPlanFor(t *testing.T) {
	spec := sampleSpec()
	spec.Threads = 2
	spec.Reads = 1000
	spec.SeekNexts = 9
	for _, c := range []struct {
		bench, dbBench, op string
		threads            int
		total              int64
	}{
		{bench.FillSeq, "fillseq", "write", 1, 50000},
		{bench.FillRandom, "filluniquerandom", "write", 1, 50000},
		{bench.Overwrite, "overwrite", "write", 1, 50000},
		{bench.ReadRandom, "readrandom", "read", 2, 2000},             // Reads per thread
		{bench.ReadSeq, "readseq", "read", 1, 50000},                  // one scan of Num keys
		{bench.SeekRandom, "seekrandom", "seek", 2, 200},              // 1000/(9+1) seeks per thread
		{bench.ReadWhileWriting, "readwhilewriting", "read", 2, 2000}, // readers only
		{bench.DeleteRandom, "deleterandom", "delete", 1, 50000},
	} {
		p := planFor(spec, c.bench)
		require.Equal(t, c.dbBench, p.dbBench, c.bench)
		require.Equal(t, c.op, p.op, c.bench)
		require.Equal(t, c.threads, p.threads, c.bench)
		require.Equal(t, c.total, p.total, c.bench)
	}
	require.Equal(t, 10, planFor(spec, bench.SeekRandom).rowsPer)
	for _, y := range []string{bench.YCSBA, bench.YCSBB, bench.YCSBC, bench.YCSBD, bench.YCSBE, bench.YCSBF} {
		p := planFor(spec, y)
		require.Empty(t, p.dbBench)
		require.Equal(t, "db_bench has no YCSB workloads", p.note)
	}
	require.Equal(t, int64(1), bench.SeekCount(&bench.Spec{Reads: 5, SeekNexts: 100}))
	spec.KeyDist = bench.KeyZipfian
	p := planFor(spec, bench.Overwrite)
	require.Empty(t, p.dbBench, "db_bench's overwrite has no zipfian keys")
	require.Contains(t, p.note, "uniformly only")
}

func TestRunSeed(t *testing.T) {
	spec := sampleSpec()
	seen := map[int64]bool{}
	for i := range 20 {
		s := runSeed(spec, i)
		require.Positive(t, s)
		require.False(t, seen[s])
		seen[s] = true
	}
	spec.Seed = 0
	require.Equal(t, int64(1), runSeed(spec, 0), "seed 0 would make db_bench seed from the clock")
	spec.Seed = 1 << 63
	require.Positive(t, runSeed(spec, 3))
}

func TestCheckSpec(t *testing.T) {
	spec := sampleSpec()
	require.NoError(t, checkSpec(spec, true))
	spec.Config.ValueThreshold = 0
	require.NoError(t, checkSpec(spec, false))
	require.ErrorContains(t, checkSpec(spec, true), "value threshold must be positive")
	spec.Config.Compression = "zstd"
	require.ErrorContains(t, checkSpec(spec, false), `compression "zstd"`)
}
