package base

// RangeTombstone deletes every point entry with user key in [Start, End)
// and sequence number < Seq, for readers whose snapshot is >= Seq.
type RangeTombstone struct {
	Start, End []byte
	Seq        SeqNum
}

// Covers reports whether t deletes an entry of key written at seq, as seen
// by a reader at snapshot snap.
func (t RangeTombstone) Covers(key []byte, seq, snap SeqNum) bool {
	return t.Seq <= snap && seq < t.Seq && Compare(t.Start, key) <= 0 && Compare(key, t.End) < 0
}
