package vlog

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sizedWriter records the sizes of its writes, and takes slow for each
// of at least slowFrom bytes.
type sizedWriter struct {
	buf      bytes.Buffer
	sizes    []int
	slowFrom int
	slow     time.Duration
	short    bool
}

func (w *sizedWriter) Write(b []byte) (int, error) {
	w.sizes = append(w.sizes, len(b))
	if w.slowFrom > 0 && len(b) >= w.slowFrom {
		time.Sleep(w.slow)
	}
	if w.short {
		return len(b) - 1, nil
	}
	return w.buf.Write(b)
}

// TestWriteAdaptive: the flusher writes whole buffers; after a slow
// whole-buffer write that the committer waited for, the next
// smallWriteRun buffers go in writeChunk pieces, and then a whole one is
// tried again; a slow write nobody waited for changes nothing. Every byte
// arrives in order either way.
func TestWriteAdaptive(t *testing.T) {
	smallWrites.Store(0)
	defer smallWrites.Store(0)
	buf := make([]byte, writerBufSize)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	w := &sizedWriter{slowFrom: writerBufSize, slow: 2 * time.Duration(slowBigWrite.Load())}

	// Slow, but no one waited: whole buffers.
	for range 3 {
		require.NoError(t, writeAdaptive(w, buf, false))
	}
	require.Equal(t, []int{writerBufSize, writerBufSize, writerBufSize}, w.sizes)

	// Slow while the committer waited: the next buffers in pieces.
	w.sizes = nil
	require.NoError(t, writeAdaptive(w, buf, true))
	require.Equal(t, []int{writerBufSize}, w.sizes)
	for range smallWriteRun {
		w.sizes = nil
		require.NoError(t, writeAdaptive(w, buf, true))
		require.Len(t, w.sizes, writerBufSize/writeChunk)
		for _, n := range w.sizes {
			require.Equal(t, writeChunk, n)
		}
	}
	// Then a whole buffer again, which, fast, keeps whole buffers (fast:
	// under the race detector, a copy of 2 MiB may take a millisecond).
	w.slowFrom = 0
	defer slowBigWrite.Store(slowBigWrite.Load())
	slowBigWrite.Store(int64(time.Hour))
	for range 2 {
		w.sizes = nil
		require.NoError(t, writeAdaptive(w, buf, true))
		require.Equal(t, []int{writerBufSize}, w.sizes)
	}
	require.Equal(t, (4+smallWriteRun+2)*writerBufSize, w.buf.Len())
	for off := 0; off < w.buf.Len(); off += writerBufSize {
		require.True(t, bytes.Equal(buf, w.buf.Bytes()[off:off+writerBufSize]), "buffer at %d", off)
	}

	// A short write is an error, in pieces or whole.
	w.short = true
	require.Error(t, writeChunked(w, buf, writeChunk))
	require.Error(t, writeChunked(w, buf, len(buf)))
	empty := &sizedWriter{}
	require.NoError(t, writeChunked(empty, nil, writeChunk))
	require.Empty(t, empty.sizes, "nothing to write, no call")
}
