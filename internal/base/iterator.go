package base

// InternalIterator iterates over internal keys in internal-key order
// (user key ascending, newest first within a user key). Memtables,
// SSTables, level concatenations and the merging iterator implement it; the
// public Iterator is built on top and hides sequence numbers, tombstones and
// shadowed versions.
//
// Positioning methods return whether the iterator is valid afterwards. When
// they return false, Error tells an exhausted iterator (nil) from a failed
// one. Key and Value stay valid until the next positioning call or Close.
type InternalIterator interface {
	// SeekGE moves to the first entry whose user key is >= key.
	SeekGE(key []byte) bool
	// SeekLT moves to the last entry whose user key is < key.
	SeekLT(key []byte) bool
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() InternalKey
	Value() []byte
	Error() error
	Close() error
}
