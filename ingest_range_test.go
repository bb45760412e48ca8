package strata

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestIngestRangeRoundTrip moves a key range of a checkpoint into a DB that
// holds data of its own (IngestRange) and restores it (RestoreRange):
// every key must read in both as in the source, by the same test clock,
// before and after the clock passes the expiries, and after compactions.
// The source is random, from a fixed seed: values inline and separated,
// some with TTLs that have passed at the move and some that pass later,
// merge operands over inline, separated, expiring and expired values and
// over none, deletions, and range deletions, two of them straddling the
// range's start and end. The clock starts in the past, so that a wall
// clock would find every TTL passed.
func TestIngestRangeRoundTrip(t *testing.T) {
	const (
		seed  = 25
		nKeys = 600
	)
	ctx := context.Background()
	fs := vfs.NewMem()
	clock := newTestClock(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := func() *Options {
		return &Options{
			FS: fs, Clock: clock.Now, Merger: ListAppend, ValueThreshold: 256,
			MemTableSize: 64 << 10, TargetFileSize: 32 << 10, LBaseMaxBytes: 128 << 10,
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%04d", i)) }
	start, end := key(150), key(450)
	value := func() []byte {
		size := 10 + rng.IntN(40)
		if rng.IntN(2) == 0 {
			size = 256 + rng.IntN(800) // separated
		}
		return bytes.Repeat([]byte{'a' + byte(rng.IntN(26))}, size)
	}
	operand := func() []byte { return ListElement(nil, fmt.Appendf(nil, "op%d", rng.IntN(1000))) }

	src, err := Open("src", opts())
	require.NoError(t, err)
	defer src.Close()
	for step := range 4000 {
		i := rng.IntN(nKeys)
		k := key(i)
		switch r := rng.IntN(100); {
		case r < 25:
			require.NoError(t, src.Set(k, value(), NoSync))
		case r < 45:
			ttl := time.Duration(1+rng.IntN(180)) * time.Minute
			require.NoError(t, src.SetWithTTL(k, value(), ttl, NoSync))
		case r < 75:
			require.NoError(t, src.Merge(k, operand(), NoSync))
		case r < 85:
			require.NoError(t, src.Delete(k, NoSync))
		case r < 87:
			require.NoError(t, src.DeleteRange(k, key(i+1+rng.IntN(20)), NoSync))
		}
		if step == 2600 {
			// Range deletions across the range's edges: they must hide
			// what they cover inside it, and nothing outside it.
			require.NoError(t, src.DeleteRange(key(140), key(160), NoSync))
			require.NoError(t, src.DeleteRange(key(440), key(460), NoSync))
		}
		switch {
		case step%1500 == 1499:
			require.NoError(t, src.Compact(nil, nil))
		case step%500 == 499:
			require.NoError(t, src.Flush())
		}
		clock.Advance(time.Second)
	}
	// Merge operands over each kind of value below them, which random
	// writes may not all make; the values deep in the tree.
	special := func(name string) []byte { return []byte("key0300/" + name) }
	small, large := []byte("small"), bytes.Repeat([]byte("L"), 700)
	require.NoError(t, src.Set(special("inline"), small, NoSync))
	require.NoError(t, src.Set(special("separated"), large, NoSync))
	require.NoError(t, src.SetWithTTL(special("expiring-inline"), small, 2*time.Hour, NoSync))
	require.NoError(t, src.SetWithTTL(special("expiring-separated"), large, 2*time.Hour, NoSync))
	require.NoError(t, src.SetWithTTL(special("expired"), large, time.Minute, NoSync))
	require.NoError(t, src.Set(special("range-deleted"), large, NoSync))
	require.NoError(t, src.SetWithTTL(special("ttl"), small, time.Hour, NoSync))
	require.NoError(t, src.Compact(nil, nil))
	require.NoError(t, src.DeleteRange(special("range-deleted"), special("range-deleted\x00"), NoSync))
	for _, name := range []string{"inline", "separated", "expiring-inline", "expiring-separated", "expired", "range-deleted", "none"} {
		require.NoError(t, src.Merge(special(name), operand(), NoSync))
		require.NoError(t, src.Flush())
		require.NoError(t, src.Merge(special(name), operand(), NoSync))
	}
	clock.Advance(2 * time.Minute)

	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	st := uploadCheckpoint(t, src, store)
	srcLive := scanRange(t, src, start, end)

	// The destination holds keys of its own: outside the range (among
	// them keys the source's edge range deletions cover), and older
	// values and operands of half the keys the source moves.
	dst, err := Open("dst", opts())
	require.NoError(t, err)
	defer dst.Close()
	own := map[string]string{} // dst's keys outside the range
	for i := range nKeys {
		k := key(i)
		if bytes.Compare(k, start) >= 0 && bytes.Compare(k, end) < 0 {
			continue
		}
		if (i >= 140 && i < 160) || (i >= 440 && i < 460) || rng.IntN(3) == 0 {
			v := value()
			require.NoError(t, dst.Set(k, v, NoSync))
			own[string(k)] = string(v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(srcLive)) {
		switch rng.IntN(4) {
		case 0:
			require.NoError(t, dst.Set([]byte(k), value(), NoSync))
		case 1:
			require.NoError(t, dst.Merge([]byte(k), operand(), NoSync))
		}
	}
	require.NoError(t, dst.Flush())
	n, err := dst.IngestRange(ctx, store, st.ID, start, end)
	require.NoError(t, err)
	require.Equal(t, len(srcLive), n, "keys moved")

	require.NoError(t, RestoreRangeFromStore(ctx, store, st.ID, start, end, "part", opts()))
	part, err := Open("part", opts())
	require.NoError(t, err)
	defer part.Close()

	universe := [][]byte{}
	for i := range nKeys {
		universe = append(universe, key(i))
	}
	for _, name := range []string{"inline", "separated", "expiring-inline", "expiring-separated", "expired", "range-deleted", "ttl", "none"} {
		universe = append(universe, special(name))
	}
	check := func(when string) {
		t.Helper()
		want := scanRange(t, src, start, end)
		wantDst := maps.Clone(own)
		maps.Copy(wantDst, want)
		requireContents(t, dst, nil, wantDst, "IngestRange "+when)
		requireContents(t, part, nil, want, "RestoreRange "+when)
		for _, k := range universe {
			if _, ok := wantDst[string(k)]; !ok {
				_, err := dst.Get(k)
				require.ErrorIs(t, err, ErrNotFound, "IngestRange %s: Get(%s)", when, k)
			}
			if _, ok := want[string(k)]; !ok {
				_, err := part.Get(k)
				require.ErrorIs(t, err, ErrNotFound, "RestoreRange %s: Get(%s)", when, k)
			}
		}
	}
	check("at the move")
	atMove := scanRange(t, src, start, end)
	for _, step := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		clock.Advance(step)
		check(fmt.Sprintf("%v later", step))
	}
	for _, db := range []*DB{src, dst, part} {
		require.NoError(t, db.Compact(nil, nil))
	}
	check("after compactions")

	// The cases the test is for did happen: keys that expired after the
	// move, merged values over values that expired after it, and over
	// one expired before it.
	after := scanRange(t, src, start, end)
	expired := 0
	for k := range atMove {
		if _, ok := after[k]; !ok {
			expired++
		}
	}
	require.Greater(t, expired, 10, "keys that expired after the move")
	require.Contains(t, atMove, string(special("ttl")))
	require.NotContains(t, after, string(special("ttl")))
	for _, name := range []string{"expiring-inline", "expiring-separated"} {
		k := string(special(name))
		require.Greater(t, len(atMove[k]), len(after[k]), "%s: the value below the operands expired", name)
		require.True(t, bytes.HasSuffix([]byte(atMove[k]), []byte(after[k])), name)
	}
	k := string(special("expired"))
	require.NotEmpty(t, atMove[k])
	require.NotContains(t, atMove[k], string(large[:2]), "the expired value is merged with the operands")
}

// scanRange returns the keys and values of db in [start, end).
func scanRange(t *testing.T, db *DB, start, end []byte) map[string]string {
	t.Helper()
	it, err := db.NewIter(&IterOptions{LowerBound: start, UpperBound: end})
	require.NoError(t, err)
	out := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	return out
}

// TestRestoreRangeMergeOutside: RestoreRangeFromStore without a Merger
// succeeds when only keys outside the range hold merge operands; they are
// deleted by the clip, never read.
func TestRestoreRangeMergeOutside(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	src, err := Open("src", &Options{FS: fs, Merger: ListAppend})
	require.NoError(t, err)
	require.NoError(t, src.Set([]byte("a"), []byte("va"), Sync))
	require.NoError(t, src.Merge([]byte("z"), ListElement(nil, []byte("x")), Sync))
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)
	st := uploadCheckpoint(t, src, store)
	require.NoError(t, src.Close())

	require.NoError(t, RestoreRangeFromStore(ctx, store, st.ID, []byte("a"), []byte("b"), "part", &Options{FS: fs}))
	db, err := Open("part", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	v, err := db.Get([]byte("a"))
	require.NoError(t, err)
	require.Equal(t, "va", string(v))
	_, err = db.Get([]byte("z"))
	require.ErrorIs(t, err, ErrNotFound)
}
