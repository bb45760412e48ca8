package strata

import (
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

func TestBatchEncoding(t *testing.T) {
	b := &Batch{}
	require.NoError(t, b.Set([]byte("k1"), []byte("v1")))
	require.NoError(t, b.Delete([]byte("k2")))
	require.NoError(t, b.DeleteRange([]byte("a"), []byte("z")))
	require.Equal(t, 3, b.Len())
	b.setSeq(100)
	r, err := newBatchReader(b.repr)
	require.NoError(t, err)
	require.Equal(t, base.SeqNum(100), r.seq)
	var got []string
	for {
		kind, key, value, ok, err := r.next()
		require.NoError(t, err)
		if !ok {
			break
		}
		got = append(got, kind.String()+":"+string(key)+"="+string(value))
	}
	require.Equal(t, []string{"SET:k1=v1", "DEL:k2=", "RANGEDEL:a=z"}, got)
	b.Reset()
	require.True(t, b.Empty())
	require.Equal(t, 0, b.Size())
}

// FuzzBatchReader: WAL records are decoded as batches during recovery, so
// arbitrary bytes must give entries or an error, never a panic.
func FuzzBatchReader(f *testing.F) {
	b := &Batch{}
	b.Set([]byte("key"), []byte("value"))
	b.DeleteRange([]byte("a"), []byte("b"))
	b.setSeq(7)
	f.Add(b.repr)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newBatchReader(data)
		if err != nil {
			return
		}
		for i := 0; i < len(data)+1; i++ {
			_, _, _, ok, err := r.next()
			if err != nil || !ok {
				return
			}
		}
		t.Fatal("batch reader did not terminate")
	})
}
