package strata

import (
	"fmt"
	"slices"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// scanKeys returns the keys an iterator with o yields, forward; and checks
// the reverse scan yields them in reverse.
func scanKeys(t *testing.T, r interface {
	NewIter(*IterOptions) (*Iterator, error)
}, o *IterOptions) []string {
	t.Helper()
	it, err := r.NewIter(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, it.Close()) }()
	var fwd, rev []string
	for ok := it.First(); ok; ok = it.Next() {
		fwd = append(fwd, string(it.Key()))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		rev = append(rev, string(it.Key()))
	}
	slices.Reverse(rev)
	require.Equal(t, fwd, rev, "forward and reverse scans differ")
	return fwd
}

// TestIterPrefix: IterOptions.Prefix yields exactly the keys that start
// with it, within the bounds, in both directions, whether or not an
// extractor's filters apply.
func TestIterPrefix(t *testing.T) {
	keys := []string{"", "a", "ab", "ab\xff", "ab\xff\xff", "abc", "abd", "b", "\xff", "\xff\xff", "\xff\xffa"}
	for _, extractor := range []*PrefixExtractor{nil, FixedPrefix(2)} {
		db, err := Open("db", &Options{FS: vfs.NewMem(), PrefixExtractor: extractor})
		require.NoError(t, err)
		for i, k := range keys {
			require.NoError(t, db.Set([]byte(k), []byte("v"), NoSync))
			if i%3 == 2 {
				require.NoError(t, db.Flush()) // tables of a few keys each
			}
		}
		for _, c := range []struct {
			o    IterOptions
			want []string
		}{
			{IterOptions{Prefix: []byte("ab")}, []string{"ab", "abc", "abd", "ab\xff", "ab\xff\xff"}},
			{IterOptions{Prefix: []byte("ab\xff")}, []string{"ab\xff", "ab\xff\xff"}},
			{IterOptions{Prefix: []byte("\xff\xff")}, []string{"\xff\xff", "\xff\xffa"}},
			{IterOptions{Prefix: []byte("")}, slices.Sorted(slices.Values(keys))},
			{IterOptions{Prefix: []byte("zz")}, nil},
			{IterOptions{Prefix: []byte("ab"), LowerBound: []byte("abd")}, []string{"abd", "ab\xff", "ab\xff\xff"}},
			{IterOptions{Prefix: []byte("ab"), UpperBound: []byte("abd")}, []string{"ab", "abc"}},
			{IterOptions{Prefix: []byte("ab"), LowerBound: []byte("b")}, nil},  // bounds past the prefix
			{IterOptions{Prefix: []byte("ab"), UpperBound: []byte("aa")}, nil}, // bounds before it
		} {
			got := scanKeys(t, db, &c.o)
			require.Equal(t, c.want, got, "extractor %v, prefix %q [%q, %q)", extractor != nil, c.o.Prefix, c.o.LowerBound, c.o.UpperBound)
		}
		snap := db.NewSnapshot()
		require.NoError(t, db.Delete([]byte("abc"), NoSync))
		require.Equal(t, []string{"ab", "abc", "abd", "ab\xff", "ab\xff\xff"}, scanKeys(t, snap, &IterOptions{Prefix: []byte("ab")}))
		require.Equal(t, []string{"ab", "abd", "ab\xff", "ab\xff\xff"}, scanKeys(t, db, &IterOptions{Prefix: []byte("ab")}))
		require.NoError(t, snap.Close())
		require.NoError(t, db.Close())
	}
}

// TestIterPrefixFilter: with an extractor, a prefix iterator reads only
// the tables whose Bloom filters may hold its prefix, and a table ruled
// out still applies its range deletions to the older tables below it.
func TestIterPrefixFilter(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem(), PrefixExtractor: FixedPrefix(4), DisableAutomaticCompactions: true})
	require.NoError(t, err)
	defer db.Close()
	// 20 tables in L0, each over nearly the whole key range (prefixes
	// p000 to p099) but holding the keys of every 20th prefix only: key
	// ranges cannot rule a table out, the filters can.
	for table := range 20 {
		for p := table; p < 100; p += 20 {
			for i := range 5 {
				require.NoError(t, db.Set(fmt.Appendf(nil, "p%03d:%d", p, i), []byte("v"), NoSync))
			}
		}
		require.NoError(t, db.Flush())
	}
	want := []string{"p047:0", "p047:1", "p047:2", "p047:3", "p047:4"}
	m0 := db.Metrics().PrefixFilter
	require.Equal(t, want, scanKeys(t, db, &IterOptions{Prefix: []byte("p047")}))
	m := db.Metrics().PrefixFilter
	require.Equal(t, uint64(20), m.Checked-m0.Checked, "every table asked")
	require.GreaterOrEqual(t, m.Skipped-m0.Skipped, uint64(17), "tables of other prefixes ruled out")

	// A prefix that is not a whole prefix (3 bytes) uses no filter.
	m0 = m
	require.Len(t, scanKeys(t, db, &IterOptions{Prefix: []byte("p04")}), 50)
	require.Equal(t, m0, db.Metrics().PrefixFilter)

	// A range deletion in a table whose keys are of other prefixes: the
	// table is ruled out, its deletion still applies to the tables below.
	require.NoError(t, db.DeleteRange([]byte("p047:"), []byte("p047:3"), NoSync))
	require.NoError(t, db.Set([]byte("p000:9"), []byte("v"), NoSync))
	require.NoError(t, db.Set([]byte("p099:9"), []byte("v"), NoSync))
	require.NoError(t, db.Flush())
	m0 = db.Metrics().PrefixFilter
	require.Equal(t, want[3:], scanKeys(t, db, &IterOptions{Prefix: []byte("p047")}))
	require.Greater(t, db.Metrics().PrefixFilter.Skipped, m0.Skipped)
	require.NoError(t, db.Compact(nil, nil)) // into the bottom level
	require.Equal(t, want[3:], scanKeys(t, db, &IterOptions{Prefix: []byte("p047")}))
}

// TestSeekLE: SeekLE lands on the key itself or the one before it, within
// the bounds, and Next and Prev go on from there.
func TestSeekLE(t *testing.T) {
	db, err := Open("db", &Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer db.Close()
	for _, k := range []string{"b", "d", "d\x00", "f"} {
		require.NoError(t, db.Set([]byte(k), []byte("v"), NoSync))
	}
	it, err := db.NewIter(&IterOptions{LowerBound: []byte("c"), UpperBound: []byte("f")})
	require.NoError(t, err)
	defer it.Close()
	for _, c := range []struct {
		seek, want string // "" want: invalid
	}{
		{"a", ""}, {"b", ""}, {"c", ""}, {"d", "d"}, {"d\x00", "d\x00"}, {"d\x00\x00", "d\x00"}, {"e", "d\x00"}, {"f", "d\x00"}, {"z", "d\x00"},
	} {
		ok := it.SeekLE([]byte(c.seek))
		require.Equal(t, c.want != "", ok, "SeekLE(%q)", c.seek)
		if ok {
			require.Equal(t, c.want, string(it.Key()), "SeekLE(%q)", c.seek)
		}
	}
	require.True(t, it.SeekLE([]byte("d")))
	require.True(t, it.Next())
	require.Equal(t, "d\x00", string(it.Key()))
	require.True(t, it.SeekLE([]byte("e")))
	require.True(t, it.Prev())
	require.Equal(t, "d", string(it.Key()))
	require.NoError(t, it.Close())
	require.False(t, it.SeekLE([]byte("d")))
	require.ErrorIs(t, it.Error(), ErrClosed)
}

func TestPrefixExtractorValidate(t *testing.T) {
	_, err := Open("db", &Options{FS: vfs.NewMem(), PrefixExtractor: &PrefixExtractor{Name: "x"}})
	require.ErrorContains(t, err, "PrefixExtractor")
	require.Equal(t, "fixed:4", FixedPrefix(4).Name)
	require.Equal(t, -1, FixedPrefix(4).Len([]byte("abc")))
	require.Equal(t, 4, FixedPrefix(4).Len([]byte("abcde")))
}

// TestPrefixExtractorPanics: an extractor whose Len panics on some key
// (user code meeting a key it did not expect) costs the table that holds
// the key its prefix filter, not the flush nor the process; scans by
// prefix still find every key, and a Len that panics on the prefix
// itself makes the scan read without filters.
func TestPrefixExtractorPanics(t *testing.T) {
	p := FixedPrefix(4)
	fixed := p.Len
	p.Len = func(key []byte) int {
		if key[0] == 'x' {
			_ = key[100] // a decoder indexing past the end
		}
		return fixed(key)
	}
	db, err := Open("db", &Options{FS: vfs.NewMem(), PrefixExtractor: p, DisableAutomaticCompactions: true})
	require.NoError(t, err)
	defer db.Close()
	for table := range 4 {
		for i := range 3 {
			require.NoError(t, db.Set(fmt.Appendf(nil, "p%03d:%d", table, i), []byte("v"), NoSync))
		}
		if table == 1 {
			require.NoError(t, db.Set([]byte("x"), []byte("v"), NoSync))
		}
		require.NoError(t, db.Flush())
	}
	for table := range 4 {
		want := []string{fmt.Sprintf("p%03d:0", table), fmt.Sprintf("p%03d:1", table), fmt.Sprintf("p%03d:2", table)}
		require.Equal(t, want, scanKeys(t, db, &IterOptions{Prefix: fmt.Appendf(nil, "p%03d", table)}))
	}
	m0 := db.Metrics().PrefixFilter
	require.Equal(t, []string{"x"}, scanKeys(t, db, &IterOptions{Prefix: []byte("x")}))
	require.Equal(t, m0, db.Metrics().PrefixFilter, "a prefix Len panics on reads without filters")
	require.NoError(t, db.Compact(nil, nil))
	require.Equal(t, []string{"p002:0", "p002:1", "p002:2"}, scanKeys(t, db, &IterOptions{Prefix: []byte("p002")}))
	require.NoError(t, db.Set([]byte("z"), []byte("v"), Sync), "writes go on")
}
