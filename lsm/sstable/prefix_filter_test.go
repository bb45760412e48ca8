package sstable

import (
	"fmt"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestPrefixFilter: with a prefix extractor the filter holds every key's
// prefix besides the key: present prefixes are never ruled out, absent
// ones are at about the filter's false-positive rate, and only a reader
// that names the same extractor rules anything out.
func TestPrefixFilter(t *testing.T) {
	fixed4 := func(k []byte) int {
		if len(k) < 4 {
			return -1 // no prefix
		}
		return 4
	}
	write := func(o WriterOptions) *Reader {
		f := newTestFile(t)
		w := NewWriter(f, o)
		for i := range 500 {
			for j := range 3 {
				k := base.MakeInternalKey([]byte(fmt.Sprintf("p%03d:%d", i*2, j)), 1, base.KindSet)
				require.NoError(t, w.Add(k, []byte("v")))
			}
		}
		require.NoError(t, w.Add(base.MakeInternalKey([]byte("zz"), 1, base.KindSet), []byte("short key, no prefix")))
		require.NoError(t, w.Close())
		f = f.reopen(t)
		return openTable(t, f, ReaderOptions{FileNum: 1})
	}

	r := write(WriterOptions{PrefixName: "fixed4", PrefixLen: fixed4})
	require.Equal(t, "fixed4", r.Properties().User[PropPrefixExtractor])
	falsePositives := 0
	for i := range 1000 {
		p := []byte(fmt.Sprintf("p%03d", i))
		may := r.MayContainPrefix("fixed4", p)
		if i%2 == 0 {
			require.True(t, may, "prefix %s of the table ruled out", p)
		} else if may {
			falsePositives++
		}
		require.True(t, r.MayContainPrefix("another", p), "another extractor's question")
		require.True(t, r.MayContainPrefix("", p))
	}
	require.Less(t, falsePositives, 50, "absent prefixes let through (of 500)")
	for i := range 500 {
		require.True(t, r.MayContain([]byte(fmt.Sprintf("p%03d:1", i*2))), "whole keys stay in the filter")
	}
	require.True(t, r.MayContain([]byte("zz")))

	// Without an extractor, or without a filter, nothing is ruled out.
	for _, o := range []WriterOptions{{}, {PrefixName: "fixed4", PrefixLen: fixed4, BitsPerKey: -1}} {
		r := write(o)
		require.Empty(t, r.Properties().User[PropPrefixExtractor])
		require.True(t, r.MayContainPrefix("fixed4", []byte("p001")))
	}
	require.Error(t, WriterOptions{PrefixLen: fixed4}.Validate(), "an extractor without a name")
}
