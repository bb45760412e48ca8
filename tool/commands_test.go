package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func TestDump(t *testing.T) {
	dir := t.TempDir() + "/db"
	makeDB(t, vfs.Default, dir, true)
	sst := filepath.Join(dir, filesOf(t, dir, base.FileTypeTable)[0])
	vl := filepath.Join(dir, liveVlog(t, dir))
	man := filepath.Join(dir, filesOf(t, dir, base.FileTypeManifest)[0])
	wal := filepath.Join(dir, filesOf(t, dir, base.FileTypeLog)[0])

	code, out := run(t, vfs.Default, "dump", "sst", sst)
	require.Equal(t, 0, code, out)
	for _, want := range []string{"properties: ", "block data at offset 0: ", "block index at offset ", "block meta-index at offset ",
		"block strata.vlog-refs at offset ", "block strata.properties at offset ", "VPTR key", ".vlog offset ", " SET key", "pointers, "} {
		contains(t, out, want)
	}

	code, out = run(t, vfs.Default, "dump", "vlog", vl, "--full")
	require.Equal(t, 0, code, out)
	contains(t, out, "offset 28: record ")
	contains(t, out, "records end at offset ")
	require.Contains(t, out, strings.Repeat("x", 300), "--full prints whole values")

	code, out = run(t, vfs.Default, "dump", "manifest", man)
	require.Equal(t, 0, code, out)
	contains(t, out, "offset 0: edit 0")
	contains(t, out, "comparer: strata.bytewise")
	contains(t, out, "the version they make:")

	code, out = run(t, vfs.Default, "dump", "wal", wal)
	require.Equal(t, 0, code, out)
	contains(t, out, "offset 0: batch seq ")
	contains(t, out, "RANGEDEL [key01990, key01995)")
	contains(t, out, "VPTR last -> ")
	contains(t, out, "VPTRM ttl -> ")
	contains(t, out, "(expires ")
	contains(t, out, `MERGE list = "\x01a"`)
	contains(t, out, "SET key00007 = v7.2-")
	contains(t, out, "the log ends at offset ")

	// A damaged table: the damaged block is named, the others printed.
	flipByte(t, sst, 100)
	code, out = run(t, vfs.Default, "dump", "sst", sst)
	require.Equal(t, 1, code, out)
	contains(t, out, "block data at offset 0 (")
	contains(t, out, "checksum mismatch")

	code, out = run(t, vfs.Default, "dump", "nonsense", sst)
	require.Equal(t, 2, code, out)
}

func TestLSMAndGC(t *testing.T) {
	dir := t.TempDir() + "/db"
	makeDB(t, vfs.Default, dir, true)
	code, out := run(t, vfs.Default, "lsm", dir)
	require.Equal(t, 0, code, out)
	contains(t, out, "L0: ")
	contains(t, out, "L6: ")
	contains(t, out, ".sst ")
	contains(t, out, "[key00000#")
	contains(t, out, "value logs: ")
	contains(t, out, "pointers")
	contains(t, out, "not in the manifest (written at commit")

	code, out = run(t, vfs.Default, "gc", dir)
	require.Equal(t, 0, code, out)
	contains(t, out, "garbage ledger (MANIFEST-")
	contains(t, out, "space amplification")
	contains(t, out, "policy reverse-lookup would decide:")
	contains(t, out, "garbage ")
	code, out = run(t, vfs.Default, "gc", "--policy", "cost", dir)
	require.Equal(t, 0, code, out)
	contains(t, out, "policy cost would decide:")
	code, _ = run(t, vfs.Default, "gc", "--policy", "none", dir)
	require.Equal(t, 2, code)
}

// TestGCDecides: after overwrites leave whole value logs without live
// bytes, gc says the policy would delete them.
func TestGCDecides(t *testing.T) {
	dir := t.TempDir() + "/db"
	opts := testOptions(vfs.Default)
	opts.DisableGC = true
	db, err := openDB(dir, opts)
	require.NoError(t, err)
	for round := 0; round < 3; round++ {
		for i := 0; i < 500; i += 2 {
			require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, round)), nil))
		}
		require.NoError(t, db.Compact(nil, nil))
	}
	require.NoError(t, db.Close())
	code, out := run(t, vfs.Default, "gc", "--policy", "passive", dir)
	require.Equal(t, 0, code, out)
	contains(t, out, "policy passive would decide:")
	require.Contains(t, out, "(no live bytes, frees ")
}

func TestScanAndGet(t *testing.T) {
	dir := t.TempDir() + "/db"
	want := makeDB(t, vfs.Default, dir, true)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	code, out := run(t, vfs.Default, "scan", dir, "--full")
	require.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, fmt.Sprintf("%d keys", len(keys)), lines[len(lines)-1])
	for i, k := range keys {
		require.Equal(t, printableKey([]byte(k), false, 0)+" "+printable([]byte(want[k]), false, 0), lines[i])
	}

	code, out = run(t, vfs.Default, "scan", "--start", testKey(95), "--end", testKey(120), "--limit", "5", dir)
	require.Equal(t, 0, code, out)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6)
	require.True(t, strings.HasPrefix(lines[0], testKey(95)+" "))
	require.True(t, strings.HasPrefix(lines[4], testKey(99)+" "), "keys 100-109 were range-deleted: %q", lines)

	code, out = run(t, vfs.Default, "scan", "--start", testKey(101), "--end", testKey(105), dir)
	require.Equal(t, 0, code, out)
	require.Equal(t, "0 keys\n", out)

	code, out = run(t, vfs.Default, "get", dir, testKey(14))
	require.Equal(t, 0, code, out)
	require.Equal(t, want[testKey(14)]+"\n", out)
	code, out = run(t, vfs.Default, "get", dir, "last")
	require.Equal(t, 0, code, out)
	require.Equal(t, want["last"]+"\n", out, "a write in the WAL only, its value in a value log the manifest does not list")
	code, out = run(t, vfs.Default, "get", dir, testKey(5))
	require.Equal(t, 1, code, out)
	contains(t, out, "not found")
	code, out = run(t, vfs.Default, "get", "--hex", dir, fmt.Sprintf("%x", testKey(14)))
	require.Equal(t, 0, code, out)
	require.Equal(t, fmt.Sprintf("%x\n", want[testKey(14)]), out)

	code, _ = run(t, vfs.Default, "get", dir)
	require.Equal(t, 2, code)
	code, out = run(t, vfs.Default, "scan", filepath.Join(dir, "missing"))
	require.Equal(t, 1, code, out)
}

// TestReadCommandsWriteNothing runs every command that reads a database
// through a filesystem that fails, and counts, every write.
func TestReadCommandsWriteNothing(t *testing.T) {
	dir := t.TempDir() + "/db"
	makeDB(t, vfs.Default, dir, true)
	var writes atomic.Int64
	fs := vfs.NewErrorFS(vfs.Default, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind.IsWrite() {
			writes.Add(1)
			return fmt.Errorf("%s: %w", op, vfs.ErrInjected)
		}
		return nil
	}))
	for _, args := range [][]string{
		{"check", dir},
		{"lsm", dir},
		{"gc", dir},
		{"scan", dir},
		{"get", dir, "last"},
		{"dump", "sst", filepath.Join(dir, filesOf(t, dir, base.FileTypeTable)[0])},
		{"dump", "vlog", filepath.Join(dir, liveVlog(t, dir))},
		{"dump", "manifest", filepath.Join(dir, filesOf(t, dir, base.FileTypeManifest)[0])},
		{"dump", "wal", filepath.Join(dir, filesOf(t, dir, base.FileTypeLog)[0])},
	} {
		code, out := run(t, fs, args...)
		require.Equal(t, 0, code, "%v:\n%s", args, out)
	}
	require.Zero(t, writes.Load())
}

func TestUsage(t *testing.T) {
	code, out := run(t, vfs.Default)
	require.Equal(t, 2, code)
	for _, c := range New().Commands() {
		contains(t, out, "  "+c.Name+" ")
	}
	code, out = run(t, vfs.Default, "help")
	require.Equal(t, 0, code, out)
	code, out = run(t, vfs.Default, "frobnicate")
	require.Equal(t, 2, code)
	contains(t, out, `unknown command "frobnicate"`)
	code, out = run(t, vfs.Default, "check")
	require.Equal(t, 2, code)
	contains(t, out, "usage: strata check DIR")
	_ = os.Stdout
}

// TestCrashtestHelpSaysWhatItTests: crashtest kills processes, which the
// page cache survives; its help says so and points to the power-loss
// tests, so nobody takes it for one.
func TestCrashtestHelpSaysWhatItTests(t *testing.T) {
	code, out := runArgs(t, vfs.Default, "crashtest", "--help")
	require.Equal(t, 0, code, out)
	contains(t, out, "page")
	contains(t, out, "cache survives it")
	contains(t, out, "TestCrashRecovery")
	contains(t, out, "-duration")
}
