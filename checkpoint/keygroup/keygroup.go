// Package keygroup prefixes keys with a key group, as Flink partitions
// keyed state, so that the state of a range of key groups is a contiguous
// key range: the unit a rescaled job restores
// (strata.RestoreRangeFromStore with the bounds Range returns).
//
// A key group is a number in [0, maxParallelism). A key's group comes
// from a hash of the key modulo maxParallelism (Flink hashes with murmur3
// of the key's hashCode; this package uses XXH64 of the key's bytes, so
// its groups do not match Flink's for the same key). The stored key is
// the group as 2 bytes, big-endian, followed by the user's key:
//
//	+-----------------+----------------+
//	| group (2 bytes, | user key ...   |
//	| big-endian)     |                |
//	+-----------------+----------------+
//
// so that keys sort by group first, and the groups [first, last] are the
// key range [Prefix(first), Prefix(last+1)).
package keygroup

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// PrefixLen is the length of the key-group prefix.
const PrefixLen = 2

// MaxGroups is the most key groups there can be (Flink's upper bound for
// maxParallelism is 32768; the 2-byte prefix allows 65536).
const MaxGroups = 1 << 16

// Of returns the key group of key among maxParallelism groups. It returns
// an error if maxParallelism is not in [1, MaxGroups].
func Of(key []byte, maxParallelism int) (uint16, error) {
	if err := checkMax(maxParallelism); err != nil {
		return 0, err
	}
	return uint16(xxhash.Sum64(key) % uint64(maxParallelism)), nil
}

// Prefix returns the prefix of group's keys.
func Prefix(group uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, group)
}

// Key appends to dst the stored form of key in group: the prefix, then
// key.
func Key(dst []byte, group uint16, key []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, group)
	return append(dst, key...)
}

// Split returns the group and the user key of a stored key; ok is false
// if the key is too short to hold a prefix.
func Split(stored []byte) (group uint16, key []byte, ok bool) {
	if len(stored) < PrefixLen {
		return 0, nil, false
	}
	return binary.BigEndian.Uint16(stored), stored[PrefixLen:], true
}

// Range returns the key range [start, end) that holds the groups
// [first, last]; end is nil when last is the largest group (no upper
// bound).
func Range(first, last uint16) (start, end []byte, err error) {
	if first > last {
		return nil, nil, fmt.Errorf("keygroup: range [%d, %d] is empty", first, last)
	}
	start = Prefix(first)
	if last < MaxGroups-1 {
		end = Prefix(last + 1)
	}
	return start, end, nil
}

// OperatorRange returns the key groups [first, last] that operator index
// of parallelism operators owns among maxParallelism groups, as Flink
// assigns them (KeyGroupRangeAssignment): contiguous ranges, as equal in
// size as can be.
func OperatorRange(maxParallelism, parallelism, index int) (first, last uint16, err error) {
	if err := checkMax(maxParallelism); err != nil {
		return 0, 0, err
	}
	if parallelism < 1 || parallelism > maxParallelism {
		return 0, 0, fmt.Errorf("keygroup: parallelism %d outside [1, maxParallelism %d]", parallelism, maxParallelism)
	}
	if index < 0 || index >= parallelism {
		return 0, 0, fmt.Errorf("keygroup: operator index %d outside [0, %d)", index, parallelism)
	}
	f := (index*maxParallelism + parallelism - 1) / parallelism
	l := ((index+1)*maxParallelism - 1) / parallelism
	return uint16(f), uint16(l), nil
}

// OperatorOf returns the operator index that owns group, as Flink
// computes it.
func OperatorOf(group uint16, maxParallelism, parallelism int) (int, error) {
	if err := checkMax(maxParallelism); err != nil {
		return 0, err
	}
	if parallelism < 1 || parallelism > maxParallelism || int(group) >= maxParallelism {
		return 0, fmt.Errorf("keygroup: group %d, parallelism %d, maxParallelism %d out of range", group, parallelism, maxParallelism)
	}
	return int(group) * parallelism / maxParallelism, nil
}

func checkMax(maxParallelism int) error {
	if maxParallelism < 1 || maxParallelism > MaxGroups {
		return fmt.Errorf("keygroup: maxParallelism %d outside [1, %d]", maxParallelism, MaxGroups)
	}
	return nil
}
