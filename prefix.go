package strata

import (
	"strconv"

	"github.com/strata-db/strata/internal/base"
)

// Prefix iteration: IterOptions.Prefix rather than Pebble's SeekPrefixGE.
// A prefix in the iterator's options says once what the whole iteration
// is about, the way Badger's IteratorOptions.Prefix does: every move
// (First, Last, SeekGE, SeekLT, SeekLE, Next, Prev) stays within the
// prefix, and the tables to read are chosen once, when the iterator is
// built, by their Bloom filters. SeekPrefixGE instead makes each seek a
// prefix probe whose validity ends at the first Next past the prefix, a
// contract that is easy to misuse (Prev and Last are undefined after it)
// and that would have us re-ask the filters at every seek. Either way the
// filters must hold prefixes, not only whole keys (lsm/sstable's filter
// hashes each user key), hence Options.PrefixExtractor.

// PrefixExtractor says which leading bytes of a key are its prefix, for
// the Bloom filters that let an iterator with IterOptions.Prefix skip the
// tables holding no key of that prefix. Options.PrefixExtractor sets it.
//
// Len must be consistent: a key that starts with a whole prefix p (Len(p)
// == len(p)) has p as its prefix (Len(key) == len(p)). FixedPrefix(n) is;
// so is "up to and including the first ':'". An iterator uses the filters
// only when its Prefix is a whole prefix; other prefixes iterate correctly
// without them.
//
// Name is recorded in every table written with the extractor, and only
// tables recording the current Name are filtered: give a changed Len a new
// Name (tables written before are then read whatever their filters say,
// until compactions rewrite them).
type PrefixExtractor struct {
	Name string
	// Len returns the length of key's prefix, at most len(key); a negative
	// length: the key has no prefix. A table in which Len panics for a key
	// goes without a prefix filter (scans by prefix read it whatever), and
	// a prefix for which it panics is scanned without filters.
	Len func(key []byte) int
}

// FixedPrefix returns the extractor whose prefix is a key's first n bytes
// (keys shorter than n have none), named "fixed:<n>".
func FixedPrefix(n int) *PrefixExtractor {
	return &PrefixExtractor{
		Name: "fixed:" + strconv.Itoa(n),
		Len: func(key []byte) int {
			if len(key) < n {
				return -1
			}
			return n
		},
	}
}

// prefixEnd returns the first key past every key that starts with prefix,
// or nil when there is none (prefix is empty or all 0xff).
func prefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte{}, prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

// prefixBounds narrows [lower, upper) to the keys that start with prefix.
// An empty result comes back as equal bounds.
func prefixBounds(prefix, lower, upper []byte) ([]byte, []byte) {
	if lower == nil || base.Compare(lower, prefix) < 0 {
		lower = prefix
	}
	if end := prefixEnd(prefix); end != nil && (upper == nil || base.Compare(end, upper) < 0) {
		upper = end
	}
	if upper != nil && base.Compare(lower, upper) > 0 {
		upper = lower
	}
	return lower, upper
}

// prefixFilter returns the name of the extractor under which prefix is a
// whole prefix, whose filters an iterator over it may ask, or "".
func (o *Options) prefixFilter(prefix []byte) (name string) {
	p := o.PrefixExtractor
	if prefix == nil || p == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			name = "" // Len panicked: read without the filters
		}
	}()
	if p.Len(prefix) != len(prefix) {
		return ""
	}
	return p.Name
}
