package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// SeqNum is a sequence number. Every write in a batch receives its own
// sequence number; a read at snapshot S sees exactly the entries with
// SeqNum <= S. Only the low 56 bits are usable: the trailer packs the kind in
// the low byte.
type SeqNum uint64

// SeqNumMax is the largest usable sequence number. It is also used in
// search keys and range-deletion sentinels, so no real entry ever carries it.
const SeqNumMax SeqNum = 1<<56 - 1

// Kind says what an internal key's entry means.
//
// The numeric values are persisted in WAL records and SSTables: never
// renumber them.
type Kind uint8

const (
	// KindDelete is a point tombstone.
	KindDelete Kind = 0
	// KindSet holds the value inline.
	KindSet Kind = 1
	// KindMerge is a merge operand (reserved for the merge operator).
	KindMerge Kind = 2
	// KindValuePointer is a set whose value lives in a value-log file; the
	// entry's value is an encoded value pointer. Flushes write it into
	// tables; garbage collection's rewrites write it through the WAL and
	// memtables.
	KindValuePointer Kind = 3
	// KindRangeDelete deletes [key, value) at its sequence number; the entry's
	// value is the exclusive end key.
	KindRangeDelete Kind = 4
	// KindSetMeta is a KindSet whose value starts with entry metadata (an
	// expiry time; see EntryMeta): meta | value.
	KindSetMeta Kind = 5
	// KindValuePointerMeta is a KindValuePointer whose value starts with
	// entry metadata: meta | encoded value pointer. The metadata stays in
	// the tree, so expiry is decided without reading the value log.
	KindValuePointerMeta Kind = 6
	// KindIngestMark appears only in WAL records: an Ingest's mark, one
	// entry per sequence number its tables were given, so that the
	// numbers run on in the WAL and recovery allocates above them. It is
	// never in a memtable or a table (Valid is false).
	KindIngestMark Kind = 7

	// KindMax is the largest kind. A search key key#S,KindMax sorts before
	// every entry of key with sequence number <= S.
	KindMax Kind = 0x7f
	// kindInvalid marks a trailer that could not be decoded.
	KindInvalid Kind = 0xff
)

var kindNames = [...]string{
	KindDelete:           "DEL",
	KindSet:              "SET",
	KindMerge:            "MERGE",
	KindValuePointer:     "VPTR",
	KindRangeDelete:      "RANGEDEL",
	KindSetMeta:          "SETM",
	KindValuePointerMeta: "VPTRM",
	KindIngestMark:       "INGEST",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	if k == KindMax {
		return "MAX"
	}
	return "KIND(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k is a kind that may appear in stored data.
func (k Kind) Valid() bool { return k <= KindValuePointerMeta }

// IsPoint reports whether k is a kind of point entry (not a range
// deletion).
func (k Kind) IsPoint() bool { return k.Valid() && k != KindRangeDelete }

// IsSet reports whether k holds a value inline (KindSet, KindSetMeta).
func (k Kind) IsSet() bool { return k == KindSet || k == KindSetMeta }

// IsPointer reports whether k holds a value pointer (KindValuePointer,
// KindValuePointerMeta).
func (k Kind) IsPointer() bool { return k == KindValuePointer || k == KindValuePointerMeta }

// HasMeta reports whether k's value starts with entry metadata.
func (k Kind) HasMeta() bool { return k == KindSetMeta || k == KindValuePointerMeta }

// WithMeta returns the kind that carries metadata for a set or pointer kind.
func (k Kind) WithMeta() Kind {
	switch k {
	case KindSet:
		return KindSetMeta
	case KindValuePointer:
		return KindValuePointerMeta
	}
	return k
}

// WithoutMeta returns the kind without metadata.
func (k Kind) WithoutMeta() Kind {
	switch k {
	case KindSetMeta:
		return KindSet
	case KindValuePointerMeta:
		return KindValuePointer
	}
	return k
}

// Trailer packs a sequence number and a kind: seq<<8 | kind.
type Trailer uint64

// MakeTrailer packs seq and kind.
func MakeTrailer(seq SeqNum, kind Kind) Trailer { return Trailer(seq)<<8 | Trailer(kind) }

// SeqNum returns the trailer's sequence number.
func (t Trailer) SeqNum() SeqNum { return SeqNum(t >> 8) }

// Kind returns the trailer's kind.
func (t Trailer) Kind() Kind { return Kind(t & 0xff) }

// TrailerLen is the encoded size of a trailer.
const TrailerLen = 8

// RangeDelSentinel is the trailer of a file bound that stands for the
// exclusive end of a range tombstone: end#SeqNumMax,RANGEDEL sorts before
// every real entry of the user key end, so a file whose largest key is a
// sentinel does not contain end itself.
var RangeDelSentinel = MakeTrailer(SeqNumMax, KindRangeDelete)

// InternalKey is a user key with its trailer. Internal keys sort by user key
// ascending, then trailer descending (newest first).
//
// Encoded form (in SSTables and the manifest):
//
//	+-----------------------+------------------------------+
//	| user key (n bytes)    | trailer: seq<<8|kind (8, LE) |
//	+-----------------------+------------------------------+
type InternalKey struct {
	UserKey []byte
	Trailer Trailer
}

// MakeInternalKey builds an internal key.
func MakeInternalKey(userKey []byte, seq SeqNum, kind Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, kind)}
}

// MakeSearchKey returns the internal key that sorts before every entry of
// userKey visible at snapshot seq (userKey#seq,KindMax).
func MakeSearchKey(userKey []byte, seq SeqNum) InternalKey {
	return MakeInternalKey(userKey, seq, KindMax)
}

// SeqNum returns the key's sequence number.
func (k InternalKey) SeqNum() SeqNum { return k.Trailer.SeqNum() }

// Kind returns the key's kind.
func (k InternalKey) Kind() Kind { return k.Trailer.Kind() }

// WithSeqOffset returns k with off added to its sequence number: a key of
// an ingested table as reads see it (see manifest.FileMetadata.SeqOffset).
func (k InternalKey) WithSeqOffset(off SeqNum) InternalKey {
	return MakeInternalKey(k.UserKey, k.SeqNum()+off, k.Kind())
}

// Size returns the encoded size of k.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Encode writes k into buf, which must have room for k.Size() bytes.
func (k InternalKey) Encode(buf []byte) {
	n := copy(buf, k.UserKey)
	binary.LittleEndian.PutUint64(buf[n:], uint64(k.Trailer))
}

// AppendEncoded appends the encoded form of k to dst.
func (k InternalKey) AppendEncoded(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, uint64(k.Trailer))
}

// Clone returns a copy of k that does not share memory with it.
func (k InternalKey) Clone() InternalKey {
	if k.UserKey == nil {
		return k
	}
	return InternalKey{UserKey: bytes.Clone(k.UserKey), Trailer: k.Trailer}
}

// IsRangeDelSentinel reports whether k is an exclusive range-deletion bound.
func (k InternalKey) IsRangeDelSentinel() bool { return k.Trailer == RangeDelSentinel }

func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.SeqNum(), k.Kind())
}

// DecodeInternalKey splits an encoded internal key. ok is false when the
// input is shorter than a trailer; callers turn that into a corruption error
// naming the file.
func DecodeInternalKey(encoded []byte) (k InternalKey, ok bool) {
	n := len(encoded) - TrailerLen
	if n < 0 {
		return InternalKey{Trailer: Trailer(KindInvalid)}, false
	}
	return InternalKey{
		UserKey: encoded[:n:n],
		Trailer: Trailer(binary.LittleEndian.Uint64(encoded[n:])),
	}, true
}

// Compare orders user keys (bytewise).
func Compare(a, b []byte) int { return bytes.Compare(a, b) }

// Equal reports whether two user keys are equal.
func Equal(a, b []byte) bool { return bytes.Equal(a, b) }

// InternalCompare orders internal keys: user key ascending, then trailer
// descending.
func InternalCompare(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncoded compares two encoded internal keys. Both must be at least
// TrailerLen bytes long.
func CompareEncoded(a, b []byte) int {
	na, nb := len(a)-TrailerLen, len(b)-TrailerLen
	if c := bytes.Compare(a[:na], b[:nb]); c != 0 {
		return c
	}
	ta := binary.LittleEndian.Uint64(a[na:])
	tb := binary.LittleEndian.Uint64(b[nb:])
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// Separator returns a short user key k with a <= k < b, appended to dst,
// for index blocks. If no shorter key exists it returns a itself.
func Separator(dst, a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n < len(a) && n < len(b) && a[n] < 0xff && a[n]+1 < b[n] {
		dst = append(dst, a[:n+1]...)
		dst[len(dst)-1]++
		return dst
	}
	return append(dst, a...)
}

// Successor returns a short user key k >= a, appended to dst.
func Successor(dst, a []byte) []byte {
	for i := 0; i < len(a); i++ {
		if a[i] != 0xff {
			dst = append(dst, a[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return append(dst, a...)
}
