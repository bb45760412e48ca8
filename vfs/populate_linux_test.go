package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// threadFaults returns the page faults the calling thread has taken.
func threadFaults(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt + ru.Majflt
}

// mapTestFile writes size bytes to a new file (so the page cache holds
// them) and maps it.
func mapTestFile(t *testing.T, size int) (path string, f File, m []byte, want []byte) {
	t.Helper()
	want = make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	// Written a page at a time, the page cache holds the file in small
	// folios, which a read maps 64 KiB at most at a time: written at once,
	// it may hold it in large ones, mapped whole.
	path = filepath.Join(t.TempDir(), "f")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < size; off += 4096 {
		if _, err := w.Write(want[off:min(off+4096, size)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, ok, err := MapFile(f, int64(size))
	if err != nil || !ok {
		t.Fatalf("MapFile: ok %v, %v", ok, err)
	}
	return path, f, m, want
}

// readPages reads a byte of every page of m on a locked thread and returns
// the faults that took.
func readPages(t *testing.T, m []byte) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadFaults(t)
	var sum byte
	for i := 0; i < len(m); i += os.Getpagesize() {
		sum += m[i]
	}
	touchSink.Store(uint32(sum))
	return threadFaults(t) - before
}

// TestPopulate: reading a fresh mapping of a cached file faults; after
// Populate it does not, and the bytes are the file's. A Populate told to
// stop at once maps nothing.
func TestPopulate(t *testing.T) {
	const size = 8 << 20 // four pieces of MapAlign
	_, _, fresh, _ := mapTestFile(t, size)
	faultsFresh := readPages(t, fresh)
	require.NoError(t, Unmap(fresh))
	if faultsFresh < 16 {
		t.Fatalf("reading a fresh mapping of %d bytes took %d faults; the test cannot tell populated from not", size, faultsFresh)
	}

	_, _, m, want := mapTestFile(t, size)
	Populate(m, func() bool { return false })
	if faults := readPages(t, m); faults > faultsFresh/8 {
		t.Fatalf("reading a populated mapping took %d faults, a fresh one %d", faults, faultsFresh)
	}
	if !bytes.Equal(m, want) {
		t.Fatal("the populated mapping does not hold the file's bytes")
	}
	require.NoError(t, Unmap(m))

	_, _, stopped, _ := mapTestFile(t, size)
	asked := 0
	Populate(stopped, func() bool { asked++; return true })
	if asked != 1 {
		t.Fatalf("stop asked %d times, want once (it said stop)", asked)
	}
	if faults := readPages(t, stopped); faults < faultsFresh/2 {
		t.Fatalf("a stopped Populate mapped pages: reading took %d faults, a fresh mapping %d", faults, faultsFresh)
	}
	require.NoError(t, Unmap(stopped))
}

// TestPopulateShrunkFile: a file truncated under its mapping makes
// Populate stop, not fault the process; PopulateAsync's stop waits for it.
func TestPopulateShrunkFile(t *testing.T) {
	path, _, m, _ := mapTestFile(t, 4<<20)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	Populate(m, func() bool { return false })
	stop := PopulateAsync(m)
	stop()
	require.NoError(t, Unmap(m))
}
