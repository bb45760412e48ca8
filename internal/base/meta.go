package base

import (
	"encoding/binary"
	"errors"
)

// EntryMeta is the metadata a set or pointer entry may carry in the tree
// (kinds KindSetMeta and KindValuePointerMeta), ahead of its value:
//
//	+----------------------------+-----------------------+---------------+
//	| uvarint expiry (ms since   | uvarint user metadata | value or      |
//	| the Unix epoch; 0: never)  | (reserved, 0)         | value pointer |
//	+----------------------------+-----------------------+---------------+
//
// It lives in the tree entry, never in a value log, so whether an entry has
// expired is known from the key side alone.
type EntryMeta struct {
	// ExpiresAt is when the entry expires, in milliseconds since the Unix
	// epoch; 0 means never.
	ExpiresAt int64
	// User is reserved for a few bits of user metadata.
	User uint64
}

// Expired reports whether an entry with this metadata has expired at now
// (milliseconds since the Unix epoch).
func (m EntryMeta) Expired(now int64) bool { return m.ExpiresAt != 0 && m.ExpiresAt <= now }

// Append appends m's encoding to dst.
func (m EntryMeta) Append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(m.ExpiresAt))
	return binary.AppendUvarint(dst, m.User)
}

var errBadMeta = errors.New("malformed entry metadata")

// MaxExpiresAt is the largest expiry an entry carries (some 146 million
// years after 1970); a larger one decodes as malformed.
const MaxExpiresAt = 1 << 62

// DecodeEntryMeta splits an entry value of a metadata kind into its
// metadata and the rest (the value or the encoded pointer).
func DecodeEntryMeta(v []byte) (EntryMeta, []byte, error) {
	exp, n := binary.Uvarint(v)
	if n <= 0 || exp > MaxExpiresAt {
		return EntryMeta{}, nil, errBadMeta
	}
	user, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return EntryMeta{}, nil, errBadMeta
	}
	return EntryMeta{ExpiresAt: int64(exp), User: user}, v[n+m:], nil
}

// SplitEntry returns the metadata (zero without it) and the payload of an
// entry of kind k.
func SplitEntry(k Kind, v []byte) (EntryMeta, []byte, error) {
	if !k.HasMeta() {
		return EntryMeta{}, v, nil
	}
	return DecodeEntryMeta(v)
}

// MergeBase returns value as a merge's existing value: the Merger's
// contract tells "the key had no value" (nil) from a value, empty ones
// included, so an empty value below the operands is passed as a non-nil
// empty slice by every path that folds operands (reads both ways,
// flushes and compactions), which then agree.
func MergeBase(value []byte) []byte {
	if value == nil {
		return []byte{}
	}
	return value
}
