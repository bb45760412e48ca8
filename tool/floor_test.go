package tool

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

func TestRateAtMost(t *testing.T) {
	for _, c := range []struct {
		rate, extraNS, want float64
	}{
		{1e6, 0, 1e6},    // no difference: the same rate
		{1e6, -200, 1e6}, // a lower floor does not raise it
		{1e6, 1000, 5e5}, // 1 us + 1 us a read
		{5e5, 500, 4e5},  // 2 us + 0.5 us
		{2e6, 1500, 5e5}, // 0.5 us + 1.5 us
		{1e3, 1e6, 500},  // 1 ms + 1 ms
		{7.4e5, 0.001, 7.4e5 / (1 + 7.4e5*1e-12)},
	} {
		require.InDelta(t, c.want, rateAtMost(c.rate, c.extraNS), c.want*1e-9, "rate %v extra %v ns", c.rate, c.extraNS)
	}
}

func TestFloorMedian(t *testing.T) {
	require.Equal(t, 3.0, median([]float64{5, 1, 3}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	in := []float64{9, 1, 5}
	median(in)
	require.Equal(t, []float64{9, 1, 5}, in, "median must not reorder its argument")
}

func TestFloorSpreadAt(t *testing.T) {
	var s floorSpread
	a, b := make([]byte, 100), make([]byte, 300)
	s.add(a)
	s.add(b)
	hits := map[*byte]int{}
	for x := uint64(0); x < 4000; x++ {
		m, off := s.at(x*7919, 40)
		require.LessOrEqual(t, off+40, len(m), "x %d", x)
		require.GreaterOrEqual(t, off, 0)
		hits[&m[0]]++
	}
	// Offsets are uniform over all the bytes: the second file, three
	// times as large, is drawn about three times as often.
	require.InDelta(t, 3.0, float64(hits[&b[0]])/float64(hits[&a[0]]), 0.3)
}

// TestFloor runs the command on a database of makeDB's (tables and value
// logs of 300-byte values) given twice, and checks its figures hang
// together; and that it refuses what it cannot measure.
func TestFloor(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "freebsd" {
		t.Skip("maps files: unix only")
	}
	dir := filepath.Join(t.TempDir(), "db")
	makeDB(t, vfs.Default, dir, false)
	code, out := run(t, vfs.Default, "floor", dir, dir, "--reads", "20000", "--rounds", "3", "--value-size", "200", "--rate", "1000000")
	require.Equal(t, 0, code, out)
	contains(t, out, "a table line, then a 200-byte value: ")
	ns := regexp.MustCompile(`value: (\d+) ns \(rounds (\d+)-(\d+)\)`).FindAllStringSubmatch(out, -1)
	require.Len(t, ns, 2, out)
	for _, m := range ns {
		med, _ := strconv.Atoi(m[1])
		lo, _ := strconv.Atoi(m[2])
		hi, _ := strconv.Atoi(m[3])
		require.True(t, lo <= med && med <= hi && lo > 0, "median %d of rounds %d-%d", med, lo, hi)
	}
	most := regexp.MustCompile(`allows at most (\d+)/s here \((\d+\.\d+)x\)`).FindStringSubmatch(out)
	require.NotNil(t, most, out)
	n, _ := strconv.Atoi(most[1])
	med0, _ := strconv.Atoi(ns[0][1])
	med1, _ := strconv.Atoi(ns[1][1])
	require.InDelta(t, rateAtMost(1e6, float64(med1-med0)), float64(n), 1e6*0.001+1, out)

	// Usage errors.
	code, out = run(t, vfs.Default, "floor", dir, "--reads", "0")
	require.Equal(t, 2, code, out)
	code, out = run(t, vfs.Default, "floor")
	require.Equal(t, 2, code, out)

	// No value log holds a record of a million bytes.
	code, out = run(t, vfs.Default, "floor", dir, "--value-size", "1000000", "--reads", "10")
	require.Equal(t, 1, code, out)
	contains(t, out, "needs tables and value logs of at least")

	// A database without value logs (every value inline).
	inline := filepath.Join(t.TempDir(), "inline")
	db, err := strata.Open(inline, &strata.Options{ValueThreshold: -1})
	require.NoError(t, err)
	for i := 0; i < 100; i++ {
		require.NoError(t, db.Set([]byte(testKey(i)), []byte(testValue(i, 0)), strata.NoSync))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	code, out = run(t, vfs.Default, "floor", inline, "--reads", "10")
	require.Equal(t, 1, code, out)
	contains(t, out, "0 value logs")

	// Not a database.
	code, out = run(t, vfs.Default, "floor", t.TempDir(), "--reads", "10")
	require.Equal(t, 1, code, out)

	// A filesystem that cannot map.
	mem := vfs.NewMem()
	makeDB(t, mem, "db", false)
	code, out = run(t, mem, "floor", "db", "--reads", "10")
	require.Equal(t, 1, code, out)
	contains(t, out, "cannot map")
}
