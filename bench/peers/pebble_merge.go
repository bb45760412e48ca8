package peers

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleListMerger is the merge operator the Pebble engines append to
// lists with (the listappend workload): operands are concatenated, oldest
// first, as by Pebble's DefaultMerger. DefaultMerger's MergeOlder copies
// everything merged so far to put the older operand in front, so a read
// meeting n operands (reads merge newest first) copies O(n^2) bytes: with
// a zipfian choice of lists, reads of a hot list of thousands of unfolded
// operands then took tens of milliseconds each. This merger keeps the
// older operands in one buffer and lays them out once, in Finish, so a
// merge is linear in its bytes, as Strata's and RocksDB's are.
var pebbleListMerger = &pebble.Merger{
	Name: "kvbench.listappend",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		m := &listValueMerger{}
		m.newer = append(m.newer, value...)
		return m, nil
	},
}

// listValueMerger gathers operands. Pebble passes them either all newer
// or all older than the first one; both are kept without moving the
// bytes already gathered.
type listValueMerger struct {
	// newer is the first operand and the newer ones after it, oldest
	// first.
	newer []byte
	// older holds the older operands, each appended as it comes (newest
	// first), and ends the offsets where each of them ends.
	older []byte
	ends  []int
}

func (m *listValueMerger) MergeNewer(value []byte) error {
	m.newer = append(m.newer, value...)
	return nil
}

func (m *listValueMerger) MergeOlder(value []byte) error {
	m.older = append(m.older, value...)
	m.ends = append(m.ends, len(m.older))
	return nil
}

// Finish lays out the older operands oldest first, then the newer ones.
func (m *listValueMerger) Finish(bool) ([]byte, io.Closer, error) {
	if len(m.ends) == 0 {
		return m.newer, nil, nil
	}
	out := make([]byte, 0, len(m.older)+len(m.newer))
	for i := len(m.ends) - 1; i >= 0; i-- {
		start := 0
		if i > 0 {
			start = m.ends[i-1]
		}
		out = append(out, m.older[start:m.ends[i]]...)
	}
	return append(out, m.newer...), nil, nil
}
