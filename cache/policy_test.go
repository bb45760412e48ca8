package cache

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// The eviction policy as a table. Each row replays a trace on a one-shard
// cache that holds exactly `capacity` blocks of policyBlockSize bytes
// (the small queue's target is then capacity/10 blocks), and on an LRU of
// the same capacity for contrast. A trace is a list of words:
//
//	*7      read block 7 through the cache: Get, and Set on a miss
//	+7      Set block 7
//	7       Get block 7
//	*1-5    (and +1-5, 1-5) the same for blocks 1..5 in order
//
// The row states which blocks are resident afterwards and how many Gets
// hit, for the cache and for LRU. Blocks are named by offset in one file.

const policyBlockSize = 1000

type policyCase struct {
	name     string
	capacity int // in blocks
	trace    string
	resident string // blocks resident afterwards, as ranges
	hits     int
	lruRes   string // the same for an LRU
	lruHits  int
}

var policyCases = []policyCase{
	{
		name:     "below capacity nothing is evicted",
		capacity: 10, trace: "*1-10 *1-10",
		resident: "1-10", hits: 10,
		lruRes: "1-10", lruHits: 10,
	},
	{
		name:     "blocks never read again leave in insertion order, as in LRU",
		capacity: 10, trace: "*1-15",
		resident: "6-15", hits: 0,
		lruRes: "6-15", lruHits: 0,
	},
	{
		name:     "a working set read three times survives a scan three times the cache",
		capacity: 10, trace: "*1-5 *1-5 *1-5 *100-129 1-5",
		resident: "1-5 125-129", hits: 15,
		lruRes: "120-129", lruHits: 10,
	},
	{
		name:     "blocks hit only once before the scan do not survive it (move threshold 2)",
		capacity: 10, trace: "*1-5 *1-5 *1 *100-129 1-5",
		resident: "1 121-129", hits: 7,
		lruRes: "120-129", lruHits: 6,
	},
	{
		name:     "a block missed soon after its eviction returns to the main queue",
		capacity: 10, trace: "*1-11 *1 *20-40 1",
		resident: "1 32-40", hits: 1,
		lruRes: "31-40", lruHits: 0,
	},
	{
		name:     "a loop over one block more than fits: LRU always misses",
		capacity: 10, trace: "*1-11 *1-11 *1-11 *1-11 *1-11",
		resident: "2-11", hits: 27,
		lruRes: "2-11", lruHits: 0,
	},
	{
		name:     "main queue: a block hit since its last examination gets a second chance",
		capacity: 10, trace: "*1-10 *1-10 *1-10 *11 *2 *12 *12 *12 *13",
		resident: "2 4-10 12-13", hits: 23,
		lruRes: "2 5-13", lruHits: 23,
	},
	{
		name:     "a new working set displaces an old one no longer read, a pass later than in LRU",
		capacity: 10, trace: "*1-8 *1-8 *1-8 *21-28 *21-28 *21-28 *21-28",
		resident: "7-8 21-28", hits: 32,
		lruRes: "7-8 21-28", lruHits: 40,
	},
}

// parseTrace expands a trace into operations.
func parseTrace(trace string) ([]policyOp, error) {
	var ops []policyOp
	for _, w := range strings.Fields(trace) {
		var kind byte
		if w != "" && (w[0] == '*' || w[0] == '+') {
			kind, w = w[0], w[1:]
		}
		lo, hi, isRange := strings.Cut(w, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil {
				return nil, err
			}
		}
		if b < a {
			return nil, fmt.Errorf("bad range %q", w)
		}
		for k := a; k <= b; k++ {
			ops = append(ops, policyOp{kind: kind, key: k})
		}
	}
	return ops, nil
}

type policyOp struct {
	kind byte // '*' read through, '+' Set, 0 Get
	key  uint64
}

// formatRanges prints sorted keys as ranges: "1-5 125-129".
func formatRanges(keys []uint64) string {
	slices.Sort(keys)
	var parts []string
	for i := 0; i < len(keys); {
		j := i
		for j+1 < len(keys) && keys[j+1] == keys[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.FormatUint(keys[i], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", keys[i], keys[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// residentKeys returns the offsets of the blocks resident in c.
func residentKeys(c *Cache) []uint64 {
	var keys []uint64
	for i := range c.shards {
		t := c.shards[i].table.Load()
		for j := range t.slots {
			if e := t.slots[j].entry.Load(); e != nil {
				keys = append(keys, e.key.offset)
			}
		}
	}
	return keys
}

func TestPolicyTable(t *testing.T) {
	block := make([]byte, policyBlockSize)
	for _, tc := range policyCases {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := parseTrace(tc.trace)
			if err != nil {
				t.Fatal(err)
			}
			c := newCache(int64(tc.capacity)*(policyBlockSize+EntryOverhead), 1)
			lru := newSimLRU(tc.capacity)
			hits, lruHits := 0, 0
			for _, op := range ops {
				if op.kind == '+' {
					c.Set(1, base.FileNum(1), op.key, block)
					lru.set(op.key)
					continue
				}
				if c.Get(1, base.FileNum(1), op.key) != nil {
					hits++
				} else if op.kind == '*' {
					c.Set(1, base.FileNum(1), op.key, block)
				}
				if lru.get(op.key) {
					lruHits++
				} else if op.kind == '*' {
					lru.set(op.key)
				}
			}
			mustCheck(t, c)
			got := formatRanges(residentKeys(c))
			gotLRU := formatRanges(lru.resident())
			if got != tc.resident || hits != tc.hits {
				t.Errorf("cache: resident %q, %d hits; want %q, %d hits", got, hits, tc.resident, tc.hits)
			}
			if gotLRU != tc.lruRes || lruHits != tc.lruHits {
				t.Errorf("LRU: resident %q, %d hits; want %q, %d hits", gotLRU, lruHits, tc.lruRes, tc.lruHits)
			}
		})
	}
}
