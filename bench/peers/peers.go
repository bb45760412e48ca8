// Package peers holds the in-process engine adapters for Strata's peers:
// Pebble v2 without and with value separation ("pebble", "pebble-vs") and
// Badger v4 ("badger"; "badger/prefetch", whose scans prefetch values, and
// "badger/verify", which verifies value checksums).
// Importing the package registers them with bench.RegisterEngine.
//
// Every adapter translates bench.Config into the engine's own options the
// same way (see BENCH.md): memtable Config.MemTableSize, block cache
// Config.CacheSize, no compression unless Config.Compression is "snappy",
// write-ahead logging on without fsync unless Config.DisableWAL or
// Config.Sync say otherwise, engine logging silenced. The option choices and
// the reasons for them are documented next to the code that sets them.
package peers

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/bench"
)

// The peers' modules; their versions come from the binary's build
// information, so a report names the versions that really ran.
const (
	pebbleModule = "github.com/cockroachdb/pebble/v2"
	badgerModule = "github.com/dgraph-io/badger/v4"
)

func pebbleVersion() string { return bench.ModuleVersion(pebbleModule) }
func badgerVersion() string { return bench.ModuleVersion(badgerModule) }

func init() {
	bench.RegisterEngine(bench.EngineInfo{
		Name:        "pebble",
		Description: "Pebble " + pebbleVersion() + ", no value separation; " + pebbleSettings,
		Open: func(dir string, cfg bench.Config) (bench.Engine, error) {
			return openPebble(dir, cfg, false)
		},
		Available: available,
		Version:   pebbleVersion,
	})
	bench.RegisterEngine(bench.EngineInfo{
		Name: "pebble-vs",
		Description: "Pebble " + pebbleVersion() + " with value separation: values >= threshold in blob files " +
			fmt.Sprintf("(max blob reference depth %d, blob files rewritten above %.0f%% garbage once %s old); ",
				pebbleMaxBlobReferenceDepth, pebbleTargetGarbageRatio*100, pebbleRewriteMinimumAge) +
			pebbleSettings,
		Open: func(dir string, cfg bench.Config) (bench.Engine, error) {
			return openPebble(dir, cfg, true)
		},
		Available: available,
		Version:   pebbleVersion,
	})
	bench.RegisterEngine(bench.EngineInfo{
		Name:        "badger",
		Description: badgerDescription,
		Open:        openBadger,
		Available:   available,
		Variant:     badgerVariant,
		Version:     badgerVersion,
	})
}

// badgerDescription describes the settings of "badger" and its variants.
var badgerDescription = "Badger " + badgerVersion() + ", values >= threshold (capped at 1 MiB) in the value log; " +
	fmt.Sprintf("%d queued memtables, %d compactors; ", badgerNumMemtables, badgerNumCompactors) +
	"DisableWAL has no effect (its memtable log cannot be turned off); " +
	fmt.Sprintf("value-log GC after each writing benchmark: RunValueLogGC(%.1f) until ErrNoRewrite", badgerGCDiscardRatio)

// pebbleSettings describes the settings both Pebble engines share.
var pebbleSettings = fmt.Sprintf("format %s, cache = block cache + %d memtables (Pebble charges memtables to its cache), "+
	"up to %d concurrent compactions", pebbleFormatName, pebbleReservedMemtables, pebbleMaxCompactions)

// available reports that an engine can run: the peers are Go modules linked
// into the binary, so they always can.
func available() error { return nil }

// errClosed is returned by operations on an engine after Close.
var errClosed = errors.New("peers: engine is closed")

// checkConfig rejects settings no engine can honour.
func checkConfig(cfg bench.Config) error {
	if cfg.MemTableSize <= 0 {
		return fmt.Errorf("peers: memtable size must be positive, got %d", cfg.MemTableSize)
	}
	if cfg.CacheSize < 0 {
		return fmt.Errorf("peers: cache size must not be negative, got %d", cfg.CacheSize)
	}
	switch cfg.Compression {
	case "", "none", "snappy":
	default:
		return fmt.Errorf("peers: compression %q is not none or snappy", cfg.Compression)
	}
	return nil
}
