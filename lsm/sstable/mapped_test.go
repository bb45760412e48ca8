package sstable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-db/strata/index/learned"
	"github.com/strata-db/strata/index/learned/learnedtest"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// openDiskTable writes data to a file on the OS's filesystem and opens it
// with o; the path is returned so that tests can damage the file.
func openDiskTable(t *testing.T, data []byte, o ReaderOptions) (*Reader, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "000001.sst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(f, int64(len(data)), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, path
}

func TestMappedTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	spec := tableSpec{entries: genEntries(rng, 3000, true), rangeDels: genRangeDels(rng, 5)}
	f, _ := writeTable(t, spec, WriterOptions{Compression: S2Compression, BlockSize: 512})
	data := f.contents(t)
	for _, cache := range []Cache{nil, newMapCache()} {
		r, _ := openDiskTable(t, data, ReaderOptions{Map: true, Cache: cache})
		if r.mapped == nil {
			t.Fatal("a table on the OS's filesystem was not mapped")
		}
		verifyTable(t, rng, r, spec.entries, 2000, 2000)
		checkRangeDels(t, r.RangeTombstones(), spec.rangeDels)
	}
}

// TestMappedTableTruncated truncates a mapped table under its Reader:
// block reads past the new end must fail as corruption, not crash.
// With a learned index, lookups read blocks in place from the mapping.
func TestMappedTableTruncated(t *testing.T) {
	for _, lo := range []*learned.Options{nil, {MaxShare: 1}} { // small blocks: a large block map
		t.Run(fmt.Sprintf("learned=%v", lo != nil), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(22, 22))
			keys := learnedtest.KeySets[0].Gen(rng, 5000)
			spec := tableSpec{entries: entriesFor(rng, keys, false)}
			f, _ := writeTable(t, spec, WriterOptions{BlockSize: 256, Learned: lo})
			r, path := openDiskTable(t, f.contents(t), ReaderOptions{Map: true})
			if r.Learned().Present != (lo != nil) {
				t.Fatalf("model: %+v", r.Learned())
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, e := range spec.entries[len(spec.entries)/2:] {
				_, _, _, _, err := r.Get(e.key.UserKey, base.SeqNumMax)
				if err != nil {
					if !errors.Is(err, base.ErrCorruption) {
						t.Fatalf("Get after truncation: %v is not corruption", err)
					}
					failed++
				}
			}
			if failed == 0 {
				t.Fatal("no Get noticed the truncation")
			}
			it := r.NewIter()
			for ok := it.First(); ok; ok = it.Next() {
			}
			if err := it.Close(); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("scan after truncation: %v", err)
			}
		})
	}
}
