package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/bench"
)

func parse(t *testing.T, args ...string) *options {
	t.Helper()
	var out bytes.Buffer
	opts, err := parseFlags(args, &out)
	require.NoError(t, err, out.String())
	return opts
}

func TestParseDefaults(t *testing.T) {
	opts := parse(t)
	d := bench.DefaultSpec()
	require.Equal(t, d.Engines, opts.spec.Engines, "one strata row with its default policy")
	require.Equal(t, d.Benchmarks, opts.spec.Benchmarks)
	require.Empty(t, opts.spec.GCPolicies)
	require.Zero(t, opts.spec.OverwriteRounds)
	require.Zero(t, opts.spec.Rounds(), "the default run's lone overwrite is no rounds")
	require.Equal(t, bench.KeyUniform, opts.spec.KeyDist)
	require.Equal(t, 1.3, opts.spec.Config.GCBudget)
	require.Equal(t, "kvbench-report.json", opts.jsonOut)
	require.Equal(t, int64(defaultComparisonReads), opts.spec.Reads, "the default comparison's read phases last long enough to compare")
	// Any run that names its size or benchmarks reads --num times.
	for _, args := range [][]string{{"--num", "1000"}, {"--benchmarks", "fillrandom,ycsb-e"}} {
		opts = parse(t, args...)
		require.Equal(t, opts.spec.Num, opts.spec.Reads, "%v", args)
	}
	require.Equal(t, int64(5), parse(t, "--reads", "5").spec.Reads)
}

func TestParseGCLab(t *testing.T) {
	opts := parse(t, "--engines", "strata,pebble-vs,badger,rocksdb-blob",
		"--gc_policy", "passive, reverse-lookup,rewrite,cost",
		"--gc_budget", "1.5", "--benchmarks", "fillrandom", "--overwrite_rounds", "5",
		"--key_dist", "zipfian", "--num", "2000", "--json", "", "--html", "out.html")
	s := opts.spec
	require.Equal(t, []string{"passive", "reverse-lookup", "rewrite", "cost"}, s.GCPolicies)
	require.Equal(t, []string{"strata/passive", "strata/reverse-lookup", "strata/rewrite", "strata/cost",
		"pebble-vs", "badger", "rocksdb-blob"}, s.Engines, "one engine per policy, in strata's place")
	require.Equal(t, []string{"fillrandom", "overwrite", "overwrite", "overwrite", "overwrite", "overwrite"}, s.Benchmarks)
	require.Equal(t, 5, s.Rounds())
	require.Equal(t, bench.KeyZipfian, s.KeyDist)
	require.Equal(t, 1.5, s.Config.GCBudget)
	require.Equal(t, int64(2000), s.Num)
	require.Empty(t, opts.jsonOut)
	require.Equal(t, "out.html", opts.htmlOut)

	// Repeated overwrites in --benchmarks are the same rounds.
	s = parse(t, "--engines", "strata", "--benchmarks", "fillrandom,overwrite,overwrite,overwrite").spec
	require.Equal(t, 3, s.Rounds())
	require.Equal(t, []string{"strata"}, s.Engines)
	// A variant can also be named directly.
	s = parse(t, "--engines", "strata/off,strata/cost,pebble").spec
	require.Equal(t, []string{"strata/off", "strata/cost", "pebble"}, s.Engines)
}

func TestParseStateWorkloads(t *testing.T) {
	s := parse(t, "--engines", "strata,strata/rmw,pebble,badger", "--benchmarks", "listappend,ttl",
		"--num", "50000", "--value_size", "100").spec
	require.Equal(t, []string{"strata", "strata/rmw", "pebble", "badger"}, s.Engines)
	require.Equal(t, []string{bench.ListAppend, bench.TTLExpiry}, s.Benchmarks)
	require.Equal(t, int64(500), s.ListKeys, "num/100")
	require.Equal(t, 5, s.ListReadPercent)
	require.Equal(t, 10*time.Second, s.TTL)
	s = parse(t, "--benchmarks", "listappend,ttl", "--list_keys", "64", "--list_read_percent", "20",
		"--ttl", "3s", "--key_dist", "zipfian").spec
	require.Equal(t, int64(64), s.ListKeys)
	require.Equal(t, 20, s.ListReadPercent)
	require.Equal(t, 3*time.Second, s.TTL)
	require.Equal(t, bench.KeyZipfian, s.KeyDist)
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gc_policy", "sometimes"}, `engine "strata/sometimes": gc: unknown policy "sometimes"`},
		{[]string{"--gc_policy", "passive,passive"}, `gc policy "passive" is listed twice`},
		{[]string{"--engines", "pebble", "--gc_policy", "passive"}, "strata is not among the engines"},
		{[]string{"--gc_budget", "0.5"}, "gc_budget is a space amplification, at least 1"},
		{[]string{"--overwrite_rounds", "-2"}, "overwrite_rounds must not be negative"},
		{[]string{"--benchmarks", "overwrite,overwrite", "--overwrite_rounds", "3"}, "conflicts with the 2 overwrites"},
		{[]string{"--key_dist", "hotspot"}, `key_dist "hotspot" is not uniform or zipfian`},
		{[]string{"--overwrite_rounds", "three"}, `invalid value "three" for flag -overwrite_rounds`},
		{[]string{"--num", "10", "extra"}, "unexpected arguments: extra"},
		{[]string{"--benchmarks", "listappend", "--list_read_percent", "120"}, "list_read_percent must be in [1, 100]"},
		{[]string{"--benchmarks", "ttl", "--ttl", "-1s"}, "ttl must be positive"},
		{[]string{"--engines", "strata/merge"}, `engine "strata/merge"`},
	} {
		var out bytes.Buffer
		_, err := parseFlags(c.args, &out)
		require.Error(t, err, "%v", c.args)
		require.Contains(t, err.Error()+out.String(), c.want, "%v", c.args)
	}
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &out)
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, name := range []string{"-gc_policy", "-gc_budget", "-overwrite_rounds", "-key_dist", "-list_keys", "-list_read_percent", "-ttl"} {
		require.Contains(t, out.String(), name)
	}
}

func TestParseStateBackend(t *testing.T) {
	opts := parse(t, "--engines", "strata,pebble", "--benchmarks", "statebackend", "--num", "5000", "--checkpoint_every", "250")
	s := opts.spec
	require.Equal(t, []string{bench.StateBackend}, s.Benchmarks)
	require.Equal(t, int64(250), s.CheckpointEvery)
	// Without the flag: a tenth of --num.
	require.Equal(t, int64(500), parse(t, "--engines", "strata", "--benchmarks", "statebackend", "--num", "5000").spec.CheckpointEvery)
	require.Zero(t, parse(t).spec.CheckpointEvery, "the default run has no statebackend")
	var out bytes.Buffer
	_, err := parseFlags([]string{"--engines", "strata", "--benchmarks", "statebackend", "--checkpoint_every", "-3"}, &out)
	require.ErrorContains(t, err, "checkpoint_every")

	// The stores' latency and bandwidth: none by default.
	require.Zero(t, s.StoreLatency)
	require.Zero(t, s.StoreBandwidth)
	s = parse(t, "--engines", "strata", "--benchmarks", "statebackend", "--store_latency", "20ms", "--store_bandwidth", "104857600").spec
	require.Equal(t, 20*time.Millisecond, s.StoreLatency)
	require.Equal(t, int64(100<<20), s.StoreBandwidth)
	_, err = parseFlags([]string{"--store_latency", "-1ms", "--store_bandwidth", "-5"}, &out)
	require.ErrorContains(t, err, "store_latency")
	require.ErrorContains(t, err, "store_bandwidth")

	// Shared mode: off by default; with --shared_cache, the open step's
	// defaults unless given.
	require.Zero(t, s.Config.SharedCache)
	require.Zero(t, s.OpenRepeats)
	s = parse(t, "--engines", "strata", "--benchmarks", "statebackend", "--shared_cache", "1073741824").spec
	require.Equal(t, int64(1<<30), s.Config.SharedCache)
	require.Equal(t, int64(bench.DefaultSharedWarmup), s.SharedWarmup)
	require.Equal(t, bench.DefaultOpenReadTime, s.OpenReadTime)
	require.Equal(t, bench.DefaultOpenRepeats, s.OpenRepeats)
	s = parse(t, "--engines", "strata", "--benchmarks", "statebackend", "--shared_cache", "1000000",
		"--shared_warmup", "5000000", "--open_read_time", "3s", "--open_repeats", "5").spec
	require.Equal(t, int64(5e6), s.SharedWarmup)
	require.Equal(t, 3*time.Second, s.OpenReadTime)
	require.Equal(t, 5, s.OpenRepeats)
	_, err = parseFlags([]string{"--shared_cache", "-1", "--shared_warmup", "-1", "--open_read_time", "-1s", "--open_repeats", "-1"}, &out)
	for _, name := range []string{"shared_cache", "shared_warmup", "open_read_time", "open_repeats"} {
		require.ErrorContains(t, err, name)
	}
	// strata/shared is an engine.
	require.Equal(t, []string{"strata", "strata/shared"}, parse(t, "--engines", "strata,strata/shared").spec.Engines)
}

// TestHelp: --help starts with what kvbench does, then three examples,
// then the flags.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	help := out.String()
	require.True(t, strings.HasPrefix(help, "kvbench runs the same key-value workloads"), help)
	examples := strings.Index(help, "Examples:")
	flags := strings.Index(help, "Flags")
	require.True(t, examples > 0 && flags > examples, help)
	require.Equal(t, 3, strings.Count(help[examples:flags], "\n  kvbench"), "three examples:\n%s", help[examples:flags])
	require.Contains(t, strings.Join(strings.Fields(help), " "), "under 1 s or 1000 operations is marked too short")
	require.Contains(t, help[flags:], "-engines")
}
