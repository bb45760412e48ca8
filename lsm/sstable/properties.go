package sstable

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strata-db/strata/internal/base"
)

// Properties describe a table. They are stored in the "strata.properties"
// meta block: a block (restart interval 1) of entries name -> value sorted
// by name. Built-in numeric properties are uvarints, the compression name is
// a string, and each user property is stored under "user." + its name with
// its value as raw bytes. Readers ignore built-in names they do not know, so
// later versions may add properties.
type Properties struct {
	NumEntries        uint64 // point entries (all kinds)
	NumDeletions      uint64 // point tombstones (KindDelete)
	NumRangeDeletions uint64 // range tombstones
	NumDataBlocks     uint64
	RawKeySize        uint64 // sum of encoded internal key sizes of point entries
	RawValueSize      uint64 // sum of point values
	DataSize          uint64 // bytes of data blocks on disk, trailers included
	IndexSize         uint64 // bytes of the index block on disk, trailer included
	FilterSize        uint64 // bytes of the filter block on disk, trailer included
	SmallestSeq       base.SeqNum
	LargestSeq        base.SeqNum
	Compression       string // name of the table's compression (see Compression.String)
	User              map[string]string
}

const userPropPrefix = "user."

// Property names. Keep them sorted within the encoded block by name; the
// encoder sorts, so the order here does not matter.
const (
	propCompression       = "strata.compression"
	propDataSize          = "strata.data.size"
	propFilterSize        = "strata.filter.size"
	propIndexSize         = "strata.index.size"
	propNumDataBlocks     = "strata.num.data-blocks"
	propNumDeletions      = "strata.num.deletions"
	propNumEntries        = "strata.num.entries"
	propNumRangeDeletions = "strata.num.range-deletions"
	propRawKeySize        = "strata.raw.key.size"
	propRawValueSize      = "strata.raw.value.size"
	propSeqLargest        = "strata.seq.largest"
	propSeqSmallest       = "strata.seq.smallest"
)

func (p *Properties) numeric() []struct {
	name string
	v    *uint64
} {
	return []struct {
		name string
		v    *uint64
	}{
		{propDataSize, &p.DataSize},
		{propFilterSize, &p.FilterSize},
		{propIndexSize, &p.IndexSize},
		{propNumDataBlocks, &p.NumDataBlocks},
		{propNumDeletions, &p.NumDeletions},
		{propNumEntries, &p.NumEntries},
		{propNumRangeDeletions, &p.NumRangeDeletions},
		{propRawKeySize, &p.RawKeySize},
		{propRawValueSize, &p.RawValueSize},
		{propSeqLargest, (*uint64)(&p.LargestSeq)},
		{propSeqSmallest, (*uint64)(&p.SmallestSeq)},
	}
}

// encode returns the properties block (before compression).
func (p *Properties) encode() []byte {
	type kv struct{ k, v string }
	var entries []kv
	for _, n := range p.numeric() {
		entries = append(entries, kv{n.name, string(binary.AppendUvarint(nil, *n.v))})
	}
	entries = append(entries, kv{propCompression, p.Compression})
	for k, v := range p.User {
		entries = append(entries, kv{userPropPrefix + k, v})
	}
	slices.SortFunc(entries, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	w := newBlockWriter(1)
	for _, e := range entries {
		w.add([]byte(e.k), []byte(e.v))
	}
	return w.finish()
}

// decodeProperties parses a properties block; errors are corruption errors
// naming file and the block offset.
func decodeProperties(b []byte, file string, off uint64) (Properties, error) {
	var p Properties
	nums := p.numeric()
	err := forEachEntry(b, file, off, nil, func(k, v []byte) error {
		name := string(k)
		if u, ok := strings.CutPrefix(name, userPropPrefix); ok {
			if p.User == nil {
				p.User = make(map[string]string)
			}
			p.User[u] = string(v)
			return nil
		}
		if name == propCompression {
			p.Compression = string(v)
			return nil
		}
		for _, n := range nums {
			if n.name == name {
				x, m := binary.Uvarint(v)
				if m <= 0 || m != len(v) {
					return base.CorruptionErrorf(file, int64(off), "property %q: bad value %x", name, v)
				}
				*n.v = x
				return nil
			}
		}
		return nil // unknown built-in property of a later version
	})
	return p, err
}

// String prints the properties one per line.
func (p *Properties) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "num entries:         %d\n", p.NumEntries)
	fmt.Fprintf(&b, "num deletions:       %d\n", p.NumDeletions)
	fmt.Fprintf(&b, "num range deletions: %d\n", p.NumRangeDeletions)
	fmt.Fprintf(&b, "num data blocks:     %d\n", p.NumDataBlocks)
	fmt.Fprintf(&b, "raw key size:        %d\n", p.RawKeySize)
	fmt.Fprintf(&b, "raw value size:      %d\n", p.RawValueSize)
	fmt.Fprintf(&b, "data size:           %d\n", p.DataSize)
	fmt.Fprintf(&b, "index size:          %d\n", p.IndexSize)
	fmt.Fprintf(&b, "filter size:         %d\n", p.FilterSize)
	fmt.Fprintf(&b, "seq nums:            [%d, %d]\n", p.SmallestSeq, p.LargestSeq)
	fmt.Fprintf(&b, "compression:         %s\n", p.Compression)
	for _, k := range slices.Sorted(maps.Keys(p.User)) {
		fmt.Fprintf(&b, "user %q: %q\n", k, p.User[k])
	}
	return b.String()
}
