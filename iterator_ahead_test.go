package strata

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// aheadKey and aheadVal build the rows of the look-ahead tests: values of
// rows i%7 == 3 stay inline, the others are separated, and every value is
// unique (a test finds it in a value log by its bytes).
func aheadKey(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }

func aheadVal(i, gen int) []byte {
	if i%7 == 3 {
		return []byte(fmt.Sprintf("in-%d-%d", i, gen))
	}
	// Random bytes: a compressed value log would not hold them as written.
	rng := rand.New(rand.NewPCG(uint64(i), uint64(gen)))
	v := make([]byte, 300)
	for j := range v {
		v[j] = byte(rng.Uint32())
	}
	return v
}

// TestIteratorLookAhead: a forward scan steps past each row with a
// separated value onto the next entry, to prefetch the next row's record
// while the row's own is read. The rows and values must be those a scan
// without it returns, whatever the next entry is: an older version of the
// same key, a version newer than the snapshot, a deletion, an inline
// value, a key past the upper bound, a record in a value log the iterator
// has not opened yet; with Value read on every row, on some or on none
// (then no value log is opened), copied or in place, and with Next and
// Prev mixed.
func TestIteratorLookAhead(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{ValueThreshold: 64, ValueLogFileSize: 64 << 10, MemTableSize: 256 << 10})
	require.NoError(t, err)
	defer db.Close()
	const n = 600
	model := map[string]string{}
	set := func(i, gen int) {
		require.NoError(t, db.Set(aheadKey(i), aheadVal(i, gen), nil))
		model[string(aheadKey(i))] = string(aheadVal(i, gen))
	}
	del := func(i int) {
		require.NoError(t, db.Delete(aheadKey(i), nil))
		delete(model, string(aheadKey(i)))
	}
	for i := 0; i < n; i++ {
		set(i, 0)
	}
	require.NoError(t, db.Flush())
	// Newer versions and deletions in the memtable, over the table's.
	for i := 0; i < n; i += 3 {
		set(i, 1)
	}
	for i := 0; i < n; i += 5 {
		del(i)
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	atSnap := maps.Clone(model)
	for i := 0; i < n; i += 4 {
		set(i, 2)
	}
	for i := 1; i < n; i += 11 {
		del(i)
	}
	current := maps.Clone(model)

	ahead := 0
	for _, c := range []struct {
		name  string
		model map[string]string
		iter  func(o *IterOptions) (*Iterator, error)
	}{
		{"current", current, db.NewIter},
		{"snapshot", atSnap, snap.NewIter},
	} {
		for _, upper := range [][]byte{nil, aheadKey(450)} {
			keys := sortedKeys(c.model, upper)
			name := fmt.Sprintf("%s/upper=%s", c.name, upper)
			// Every row's value, every third row's, none.
			for _, every := range []int{1, 3, 0, -1} {
				// -1: every row's value, in place (MappedValues).
				it, err := c.iter(&IterOptions{UpperBound: upper, MappedValues: every < 0})
				require.NoError(t, err)
				j := 0
				for ok := it.First(); ok; ok = it.Next() {
					require.Less(t, j, len(keys), name)
					require.Equal(t, keys[j], string(it.Key()), name)
					if every < 0 || every > 0 && j%every == 0 {
						require.Equal(t, c.model[keys[j]], string(it.Value()), "%s: %s", name, keys[j])
					}
					if it.ahead.Located() {
						ahead++
					}
					j++
				}
				if every == 0 {
					require.Zero(t, it.held.len(), "%s: a scan of keys opened value logs", name)
				}
				require.NoError(t, it.Close(), name)
				require.Equal(t, len(keys), j, name)
			}
			// Next and Prev at random.
			it, err := c.iter(&IterOptions{UpperBound: upper})
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(1, uint64(len(keys))))
			pos := len(keys) / 2
			require.True(t, it.SeekGE([]byte(keys[pos])))
			for step := 0; step < 3000; step++ {
				var ok bool
				if rng.IntN(3) > 0 {
					ok, pos = it.Next(), pos+1
				} else {
					ok, pos = it.Prev(), pos-1
				}
				if pos < 0 || pos >= len(keys) {
					require.False(t, ok, "%s: step %d", name, step)
					pos = rng.IntN(len(keys))
					require.True(t, it.SeekGE([]byte(keys[pos])))
					continue
				}
				require.True(t, ok, "%s: step %d", name, step)
				require.Equal(t, keys[pos], string(it.Key()), "%s: step %d", name, step)
				if rng.IntN(2) == 0 {
					require.Equal(t, c.model[keys[pos]], string(it.Value()), "%s: step %d", name, step)
				}
			}
			require.NoError(t, it.Close(), name)
		}
	}
	// The value logs are mapped on this filesystem: most rows found their
	// successor's record.
	require.Greater(t, ahead, n, "rows that located the next row's record")
}

// TestIteratorLookAheadEveryRow: a scan that reads values locates every
// next row's record, also in value logs it has not read from yet but the
// database has open (the values were written in random order to many
// small logs); the row a seek lands on has no row before it to locate it.
func TestIteratorLookAheadEveryRow(t *testing.T) {
	const n = 3000
	db := openShuffled(t, &Options{ValueThreshold: 64, ValueLogFileSize: 64 << 10, MemTableSize: 1 << 20}, n, 3)
	require.NoError(t, db.Flush())
	require.Greater(t, db.Metrics().ValueLogs.Files, 10)
	// The first scan opens the value logs; the second finds them open.
	for scan := 0; scan < 2; scan++ {
		located, reused := scanLocated(t, db, nil, n)
		if scan == 1 {
			require.Equal(t, n-2, located, "rows that located the next row's record (all but the first and the last)")
			require.Equal(t, n-2, reused, "rows read with the pointer the look ahead decoded (all but the first two: the first had read no value when it looked ahead)")
		}
	}
}

// TestIteratorLookAheadLiveLog: a scan of values still in the value log
// being written at commit (no flush since they were written) locates each
// next row's record in that log's mapping, as it does in finished logs,
// and reads the right values.
func TestIteratorLookAheadLiveLog(t *testing.T) {
	const n = 3000
	db := openShuffled(t, &Options{ValueThreshold: 64, ValueLogFileSize: 64 << 20, MemTableSize: 32 << 20}, n, 4)
	// A synced write puts every record in the file, where the mapping
	// reads it (records still in the writer's buffer are copied, not
	// located).
	require.NoError(t, db.Set([]byte("z"), aheadVal(1, 0), &WriteOptions{Sync: true}))
	require.Zero(t, db.Metrics().ValueLogs.Files, "the values are in the live log only")
	located, _ := scanLocated(t, db, &IterOptions{UpperBound: []byte("z")}, n)
	require.Equal(t, n-2, located, "rows that located the next row's record (all but the first, which had read no value yet, and the last)")
}

// openShuffled opens a DB with opts (closed when the test ends) and
// writes the n rows scanLocated reads, in an order drawn from seed (so
// their values lie in the value logs in no order of the keys).
func openShuffled(t *testing.T, opts *Options, n int, seed uint64) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, i := range rand.New(rand.NewPCG(seed, seed)).Perm(n) {
		require.NoError(t, db.Set([]byte(fmt.Sprintf("k%05d", i)), aheadVal(i*7, 0), nil))
	}
	return db
}

// scanLocated scans db (n rows k%05d with values aheadVal(i*7, 0)),
// checking each row's value, and returns how many rows had located the
// next row's record, and how many were read with the pointer and value
// log the look ahead from the row before had found.
func scanLocated(t *testing.T, db *DB, o *IterOptions, n int) (located, reused int) {
	t.Helper()
	it, err := db.NewIter(o)
	require.NoError(t, err)
	j := 0
	for ok := it.First(); ok; ok = it.Next() {
		if c := it.aheads[it.nextAhead^1]; it.isPtr && c.ok && bytes.Equal(c.raw, it.value) {
			reused++ // fetch reads with the pointer the look ahead decoded
		}
		require.Equal(t, string(aheadVal(j*7, 0)), string(it.Value()), "row %d", j)
		if it.ahead.Located() {
			located++
		}
		j++
	}
	require.NoError(t, it.Close())
	require.Equal(t, n, j)
	return located, reused
}

// TestIteratorLookAheadCorrupt: a corrupt record fails the row it belongs
// to when its value is read, not the row before it, whose scan stepped
// past onto it and prefetched it; the scan stops there with a corruption
// error that Close returns.
func TestIteratorLookAheadCorrupt(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ValueThreshold: 64, ValueLogFileSize: 64 << 10, MemTableSize: 256 << 10}
	db, err := Open(dir, opts)
	require.NoError(t, err)
	const n, bad = 300, 100 // separated, and so is row 99 (i%7 != 3)
	for i := 0; i < n; i++ {
		require.NoError(t, db.Set(aheadKey(i), aheadVal(i, 0), nil))
	}
	require.NoError(t, db.Close())

	// Flip a byte of the bad row's value where it lies in its value log.
	want := aheadVal(bad, 0)
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	found := false
	for _, name := range logs {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		if off := bytes.Index(b, want); off >= 0 {
			b[off+len(want)/2] ^= 0x40
			require.NoError(t, os.WriteFile(name, b, 0o644))
			found = true
			break
		}
	}
	require.True(t, found, "the bad row's value in a value log")

	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	it, err := db.NewIter(nil)
	require.NoError(t, err)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		require.Equal(t, string(aheadKey(i)), string(it.Key()))
		v := it.Value()
		if i == bad {
			require.Nil(t, v)
			break
		}
		require.Equal(t, string(aheadVal(i, 0)), string(v), "row %d", i)
		if i == bad-1 {
			require.True(t, it.ahead.Located(), "row %d located the bad record", i)
		}
		i++
	}
	require.Equal(t, bad, i, "the scan stopped at the bad row")
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Error(), ErrCorruption)
	require.ErrorIs(t, it.Close(), ErrCorruption)
}

func sortedKeys(m map[string]string, upper []byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if upper == nil || k < string(upper) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
