package tool

import (
	"fmt"

	"github.com/strata-db/strata"
)

// stressMerger is the merger of stress databases. An operand is a value
// as stress writes it (stressValue), and the newest operand wins, so that
// a Merge reads back as the Set of the same value would and the expected
// state needs nothing new. What it checks makes the merges worth
// testing: write ids grow with each write of a key, so an operand below
// another with a larger id, or the value below them newer than the
// first, means the engine reordered a key's entries (in a flush, a
// compaction, recovery or garbage collection). Merge then fails, and so
// does the read that needed it, which fails the run.
type stressMerger struct{}

// stressMergerName is what a stress database records as its merger.
const stressMergerName = "strata.stress.NewestWins"

func (stressMerger) Name() string { return stressMergerName }

func (stressMerger) Merge(key, existing []byte, operands [][]byte) ([]byte, error) {
	if len(operands) == 0 {
		return nil, fmt.Errorf("stress merger: key %q: no operand", key)
	}
	i, ok := parseStressKey(key)
	if !ok {
		return nil, fmt.Errorf("stress merger: key %q was never written", key)
	}
	var last uint32
	if existing != nil {
		if last, ok = parseStressValue(i, existing); !ok {
			return nil, fmt.Errorf("stress merger: key %q: the value below the operands was never written", key)
		}
	}
	if err := checkOperandOrder(i, key, last, operands); err != nil {
		return nil, err
	}
	return append([]byte(nil), operands[len(operands)-1]...), nil
}

func (stressMerger) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	i, ok := parseStressKey(key)
	if !ok || checkOperandOrder(i, key, 0, operands) != nil {
		return nil, false // kept as they are: Merge reports them
	}
	return append([]byte(nil), operands[len(operands)-1]...), true
}

// checkOperandOrder checks that operands of key i are writes of it with
// ids growing from above last.
func checkOperandOrder(i int, key []byte, last uint32, operands [][]byte) error {
	for _, op := range operands {
		id, ok := parseStressValue(i, op)
		if !ok {
			return fmt.Errorf("stress merger: key %q: an operand was never written", key)
		}
		if id <= last {
			return fmt.Errorf("stress merger: key %q: write %d merged after write %d: entries out of order", key, id, last)
		}
		last = id
	}
	return nil
}

var _ strata.Merger = stressMerger{}
