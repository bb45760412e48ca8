package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

const testInstance = "0123456789abcdef"

// writeLocal writes a local file of the database of n random bytes.
func writeLocal(t *testing.T, fs vfs.FS, num base.FileNum, n int, seed uint64) []byte {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	require.NoError(t, vfs.WriteFileSynced(fs, fs.PathJoin("db", base.MakeFilename(base.FileTypeTable, num)), data))
	return data
}

// shareRemoteOnly writes table num of n bytes (from seed), shares it
// through f and deletes its local copy: its reads go to the store.
func shareRemoteOnly(t *testing.T, f *Files, fs vfs.FS, num base.FileNum, n int, seed uint64) ([]byte, manifest.SharedRef) {
	t.Helper()
	data := writeLocal(t, fs, num, n, seed)
	ref, err := f.Share(context.Background(), base.FileTypeTable, num, int64(len(data)))
	require.NoError(t, err)
	require.NoError(t, fs.Remove(fs.PathJoin("db", base.MakeFilename(base.FileTypeTable, num))))
	f.Track(base.FileTypeTable, num, ref, int64(len(data)), false)
	return data, ref
}

func newTestFiles(t *testing.T, fs vfs.FS, s Store, cacheSize, partSize int64) *Files {
	t.Helper()
	f, err := New(Options{Store: s, FS: fs, Dir: "db", Instance: testInstance, CacheSize: cacheSize, PartSize: partSize})
	require.NoError(t, err)
	return f
}

// TestFilesShareAndRead: a shared file reads the same through its whole
// local copy and, once that is evicted, through parts fetched with ranged
// GETs; parts are cached (a second read costs no GET), the cache stays
// within its bound, and Release deletes the local bytes and the object.
func TestFilesShareAndRead(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	const part = 4096
	f := newTestFiles(t, fs, s, 10*part, part)
	data := writeLocal(t, fs, 5, 7*part+123, 1)
	ref, err := f.Share(ctx, base.FileTypeTable, 5, int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, ObjectName(testInstance, base.FileTypeTable, 5), ref.Object)
	holders, err := Holders(ctx, s, ref.Object)
	require.NoError(t, err)
	require.Equal(t, []string{InstanceHolder(testInstance)}, holders)
	f.Track(base.FileTypeTable, 5, ref, int64(len(data)), true)
	require.NoError(t, f.Start())
	require.True(t, f.HasLocal(base.FileTypeTable, 5))

	// The whole copy is the directory's own file.
	file, err := f.Open(base.FileTypeTable, 5)
	require.NoError(t, err)
	got := make([]byte, len(data))
	_, err = file.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.NoError(t, file.Close())
	require.Zero(t, s.getCount())

	// A second file pushes the first out of the cache (10 parts of room).
	data2 := writeLocal(t, fs, 6, 6*part, 2)
	ref2, err := f.Share(ctx, base.FileTypeTable, 6, int64(len(data2)))
	require.NoError(t, err)
	f.Track(base.FileTypeTable, 6, ref2, int64(len(data2)), true)
	require.False(t, f.HasLocal(base.FileTypeTable, 5), "the older copy was not evicted")
	_, err = fs.Stat("db/000005.sst")
	require.True(t, errors.Is(err, os.ErrNotExist), "evicted copy still on disk: %v", err)

	file, err = f.Open(base.FileTypeTable, 5)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 200 {
		off := rng.IntN(len(data))
		n := 1 + rng.IntN(3*part)
		buf := make([]byte, n)
		m, err := file.ReadAt(buf, int64(off))
		if off+n > len(data) {
			require.ErrorIs(t, err, io.EOF, "read %d", i)
			require.Equal(t, len(data)-off, m)
		} else {
			require.NoError(t, err, "read %d", i)
			require.Equal(t, n, m)
		}
		require.Equal(t, data[off:off+m], buf[:m], "read %d at %d+%d", i, off, n)
		require.LessOrEqual(t, f.Stats().CachedBytes, int64(10*part))
	}
	st := f.Stats()
	require.Positive(t, st.Gets)
	require.Positive(t, st.PartHits)
	require.Equal(t, int64(s.getCount()), st.Gets)

	// Read it all twice more: the second pass fetches nothing new if the
	// file fits the cache (it does, once file 6's copy is evicted).
	all, err := io.ReadAll(io.NewSectionReader(file, 0, int64(len(data))))
	require.NoError(t, err)
	require.Equal(t, data, all)
	gets := s.getCount()
	all, err = io.ReadAll(io.NewSectionReader(file, 0, int64(len(data))))
	require.NoError(t, err)
	require.Equal(t, data, all)
	require.Equal(t, gets, s.getCount(), "cached parts were fetched again")

	// Release: local bytes and the object go, and so do the parts
	// being written when it came.
	require.NoError(t, f.Release(ctx, base.FileTypeTable, 5))
	require.False(t, s.has(ref.Object))
	f.keeping.Wait()
	names, err := fs.List("db/" + CacheDirName)
	require.NoError(t, err)
	require.Empty(t, names, "parts of a released file are left")
	_, ok := f.Shared(base.FileTypeTable, 5)
	require.False(t, ok)
}

// TestFilesRestartKeepsParts: parts fetched before a restart serve reads
// after it without a GET; parts of files no longer shared, and half
// written ones, are deleted.
func TestFilesRestartKeepsParts(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	const part = 1024
	f := newTestFiles(t, fs, s, -1, part)
	data, ref := shareRemoteOnly(t, f, fs, 9, 5*part, 4)
	require.NoError(t, f.Start())
	file, err := f.Open(base.FileTypeTable, 9)
	require.NoError(t, err)
	buf := make([]byte, len(data))
	_, err = file.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, data, buf)
	gets := s.getCount()
	require.Equal(t, 5, gets)
	f.Close() // as the database's Close: the parts are written
	// Leftovers a crash or an older run could leave.
	require.NoError(t, vfs.WriteFileSynced(fs, "db/"+CacheDirName+"/000009.sst.2.tmp-1", []byte("x")))
	require.NoError(t, vfs.WriteFileSynced(fs, "db/"+CacheDirName+"/000004.sst.0", []byte("x")))

	f2 := newTestFiles(t, fs, s, -1, part)
	f2.Track(base.FileTypeTable, 9, ref, int64(len(data)), false)
	require.NoError(t, f2.Start())
	require.Equal(t, int64(len(data)), f2.Stats().CachedBytes)
	file, err = f2.Open(base.FileTypeTable, 9)
	require.NoError(t, err)
	buf = make([]byte, len(data))
	_, err = file.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, data, buf)
	require.Equal(t, gets, s.getCount(), "a restart fetched cached parts again")
	names, err := fs.List("db/" + CacheDirName)
	require.NoError(t, err)
	require.Len(t, names, 5, "leftovers kept: %v", names)
}

// TestFilesConcurrentReads: readers of one cold part share one GET; every
// read returns the file's bytes.
func TestFilesConcurrentReads(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	gate := make(chan struct{})
	var once sync.Once
	f := newTestFiles(t, fs, s, -1, 4096)
	data, _ := shareRemoteOnly(t, f, fs, 3, 4096, 5)
	s.fail = func(op, name string) error {
		if op == "get" {
			<-gate // every reader arrives before the GET answers
		}
		return nil
	}
	file, err := f.Open(base.FileTypeTable, 3)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 100)
			_, err := file.ReadAt(buf, int64(i*100))
			require.NoError(t, err)
			require.Equal(t, data[i*100:i*100+100], buf)
		}()
	}
	for f.Stats().PartMisses < 8 {
		runtime.Gosched()
	}
	once.Do(func() { close(gate) })
	wg.Wait()
	require.Equal(t, 1, s.getCount())
}

// TestFilesReadErrors: a failed GET is the read's error; a later read
// retries; a short object is an error, never short data.
func TestFilesReadErrors(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	f := newTestFiles(t, fs, s, -1, 1024)
	data, ref := shareRemoteOnly(t, f, fs, 8, 3000, 6)
	boom := errors.New("boom")
	s.failOp("get", boom)
	file, err := f.Open(base.FileTypeTable, 8)
	require.NoError(t, err)
	buf := make([]byte, 10)
	_, err = file.ReadAt(buf, 0)
	require.ErrorIs(t, err, boom)
	require.Contains(t, err.Error(), "000008.sst")
	s.fail = nil
	_, err = file.ReadAt(buf, 0)
	require.NoError(t, err)
	require.Equal(t, data[:10], buf)

	// The object is shorter than the manifest says (damaged or
	// replaced): the read of the missing range fails.
	s.mu.Lock()
	s.objects[ref.Object] = s.objects[ref.Object][:2500]
	s.mu.Unlock()
	_, err = file.ReadAt(buf, 2990)
	require.Error(t, err)
}

// TestFilesReleaseKeepsSharedObject: files read from one object (pieces
// of a checkpoint's segment) hold it by one marker, which their release
// drops only with the last of them: before, the release of one file let
// the object go while the others still read from it.
func TestFilesReleaseKeepsSharedObject(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	f := newTestFiles(t, fs, s, 1<<20, 4096)
	const seg = "data/00000000000000000001-0000-00000000"
	require.NoError(t, s.Put(ctx, seg, bytes.NewReader(make([]byte, 300)), 300))
	for i, num := range []base.FileNum{7, 8} {
		ref := manifest.SharedRef{Object: seg, Offset: uint64(i * 100)}
		require.NoError(t, f.Adopt(ctx, ref))
		f.Track(base.FileTypeTable, num, ref, 100, false)
	}
	require.NoError(t, f.Start())
	require.NoError(t, f.Release(ctx, base.FileTypeTable, 7))
	holders, err := Holders(ctx, s, seg)
	require.NoError(t, err)
	require.Equal(t, []string{InstanceHolder(testInstance)}, holders, "released while 000008.sst reads from it")
	require.True(t, s.has(seg))
	require.NoError(t, f.Release(ctx, base.FileTypeTable, 8))
	require.False(t, s.has(seg), "the last file's release keeps the object")
}

// TestFilesShareFailureDropsMarker: a Share that fails after its marker
// (the local file was deleted meanwhile, the Put failed) drops the
// marker: nothing names the object, and the marker would otherwise hold
// it until the next Open.
func TestFilesShareFailureDropsMarker(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	f := newTestFiles(t, fs, s, 1<<20, 4096)
	_, err := f.Share(ctx, base.FileTypeTable, 9, 100) // no such local file
	require.Error(t, err)
	writeLocal(t, fs, 10, 100, 1)
	s.fail = func(op, name string) error {
		if op == "put" && name == ObjectName(testInstance, base.FileTypeTable, 10) {
			return errors.New("injected")
		}
		return nil
	}
	_, err = f.Share(ctx, base.FileTypeTable, 10, 100)
	require.ErrorContains(t, err, "injected")
	s.fail = nil
	marked, err := Marked(ctx, s)
	require.NoError(t, err)
	require.Empty(t, marked)
}

// TestFilesRestartWithAnotherPartSize: parts cached under one part size
// are never read as parts of another, which would be other bytes of the
// file; a reopen with a smaller or larger size keeps only what is a whole
// part of its own size (a last part of the same range), and every read
// returns the file's bytes.
func TestFilesRestartWithAnotherPartSize(t *testing.T) {
	for _, sizes := range [][2]int64{{1024, 4096}, {4096, 1024}} {
		fs := vfs.NewMem()
		require.NoError(t, fs.MkdirAll("db", 0o755))
		s := newMemStore()
		f := newTestFiles(t, fs, s, -1, sizes[0])
		// 4096+1024 bytes: with either size, part 1 is 1024 bytes long.
		data, ref := shareRemoteOnly(t, f, fs, 9, 4096+1024, 5)
		require.NoError(t, f.Start())
		file, err := f.Open(base.FileTypeTable, 9)
		require.NoError(t, err)
		buf := make([]byte, len(data))
		_, err = file.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, data, buf)

		f2 := newTestFiles(t, fs, s, -1, sizes[1])
		f2.Track(base.FileTypeTable, 9, ref, int64(len(data)), false)
		require.NoError(t, f2.Start())
		file, err = f2.Open(base.FileTypeTable, 9)
		require.NoError(t, err)
		for off := 0; off < len(data); off += 512 {
			b := make([]byte, 512)
			_, err = file.ReadAt(b, int64(off))
			require.NoError(t, err)
			require.Equal(t, data[off:off+512], b, "sizes %v, offset %d", sizes, off)
		}
	}
}

// TestFilesReadDoesNotWaitForCacheWrite: a read that fetched a part
// returns while the part's cache file is still being synced; readers of
// the part meanwhile take the fetched bytes without another GET, and
// the part is cached once its write is done.
func TestFilesReadDoesNotWaitForCacheWrite(t *testing.T) {
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("db", 0o755))
	gate := make(chan struct{})
	syncing := make(chan struct{}, 16)
	fs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.Contains(op.Path, CacheDirName) {
			syncing <- struct{}{}
			<-gate
		}
		return nil
	}))
	s := newMemStore()
	const part = 1024
	f := newTestFiles(t, fs, s, -1, part)
	data, _ := shareRemoteOnly(t, f, fs, 4, 3*part, 7)
	require.NoError(t, f.Start())
	file, err := f.Open(base.FileTypeTable, 4)
	require.NoError(t, err)
	buf := make([]byte, 100)
	_, err = file.ReadAt(buf, 10) // returns although the sync is held
	require.NoError(t, err)
	require.Equal(t, data[10:110], buf)
	<-syncing
	_, err = file.ReadAt(buf, 500)
	require.NoError(t, err)
	require.Equal(t, data[500:600], buf)
	require.Equal(t, 1, s.getCount())
	require.Zero(t, f.Stats().CachedBytes, "cached before its file was written")
	close(gate)
	f.keeping.Wait()
	require.Equal(t, int64(part), f.Stats().CachedBytes)
	_, err = file.ReadAt(buf, 700)
	require.NoError(t, err)
	require.Equal(t, data[700:800], buf)
	require.Equal(t, 1, s.getCount())
	f.Close()
}

// TestFilesPrefetch: Prefetch fetches, in the background, the parts of a
// range the cache lacks, once each, and a read of the range then makes no
// GET; a range already cached, a file with a whole local copy, a range
// past the end and a closed Files fetch nothing.
func TestFilesPrefetch(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	const part = 1024
	f := newTestFiles(t, fs, s, -1, part)
	data := writeLocal(t, fs, 5, 4*part, 8)
	ref, err := f.Share(ctx, base.FileTypeTable, 5, int64(len(data)))
	require.NoError(t, err)
	local := writeLocal(t, fs, 6, 2*part, 9)
	ref6, err := f.Share(ctx, base.FileTypeTable, 6, int64(len(local)))
	require.NoError(t, err)
	require.NoError(t, fs.Remove("db/000005.sst"))
	f.Track(base.FileTypeTable, 5, ref, int64(len(data)), false)
	f.Track(base.FileTypeTable, 6, ref6, int64(len(local)), true)
	require.NoError(t, f.Start())

	f.Prefetch(base.FileTypeTable, 5, part+10, part)  // parts 1 and 2
	f.Prefetch(base.FileTypeTable, 5, part+20, 100)   // part 1 again: in flight or cached
	f.Prefetch(base.FileTypeTable, 6, 0, 100)         // a whole local copy
	f.Prefetch(base.FileTypeTable, 5, 3*part, 2*part) // past the end
	f.Prefetch(base.FileTypeTable, 7, 0, 100)         // not shared
	f.keeping.Wait()
	require.Equal(t, 2, s.getCount())
	st := f.Stats()
	require.Equal(t, int64(2), st.Prefetches)
	require.Equal(t, int64(2*part), st.CachedBytes-int64(len(local)))

	file, err := f.Open(base.FileTypeTable, 5)
	require.NoError(t, err)
	buf := make([]byte, part)
	_, err = file.ReadAt(buf, part+10)
	require.NoError(t, err)
	require.Equal(t, data[part+10:2*part+10], buf)
	require.Equal(t, 2, s.getCount(), "a prefetched part was fetched again")
	f.Prefetch(base.FileTypeTable, 5, part, 2*part) // cached: nothing
	f.keeping.Wait()
	require.Equal(t, 2, s.getCount())

	f.Close()
	f.Prefetch(base.FileTypeTable, 5, 0, 100)
	f.keeping.Wait()
	require.Equal(t, 2, s.getCount(), "a closed Files prefetched")
}

// hungStore answers no GET until the request's context ends.
type hungStore struct {
	Store
	started chan struct{}
}

func (h hungStore) Get(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestFilesCloseEndsFetches: Close does not wait for a store that does not
// answer: the prefetches in flight end with it, and so does a read's
// fetch, with an error.
func TestFilesCloseEndsFetches(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	f := newTestFiles(t, fs, s, -1, 1024)
	data := writeLocal(t, fs, 3, 4096, 5)
	ref, err := f.Share(ctx, base.FileTypeTable, 3, int64(len(data)))
	require.NoError(t, err)
	require.NoError(t, fs.Remove("db/000003.sst"))

	hung := hungStore{Store: s, started: make(chan struct{}, 8)}
	g, err := New(Options{Store: hung, FS: fs, Dir: "db", Instance: testInstance, CacheSize: -1, PartSize: 1024})
	require.NoError(t, err)
	g.Track(base.FileTypeTable, 3, ref, int64(len(data)), false)
	require.NoError(t, g.Start())
	g.Prefetch(base.FileTypeTable, 3, 0, 2048) // two parts
	file, err := g.Open(base.FileTypeTable, 3)
	require.NoError(t, err)
	readErr := make(chan error, 1)
	go func() {
		_, err := file.ReadAt(make([]byte, 10), 3000)
		readErr <- err
	}()
	for range 3 {
		<-hung.started
	}
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits for fetches the store does not answer")
	}
	require.ErrorIs(t, <-readErr, context.Canceled)
}

// TestFilesReleaseRetried: a release whose marker's Delete fails is
// retried by the next Release of the file, which deletes the object;
// before, the file was forgotten at the first try and the object left.
func TestFilesReleaseRetried(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	f := newTestFiles(t, fs, s, -1, 1024)
	_, ref := shareRemoteOnly(t, f, fs, 7, 3000, 3)
	boom := errors.New("boom")
	s.failOp("delete", boom)
	require.ErrorIs(t, f.Release(ctx, base.FileTypeTable, 7), boom)
	require.True(t, s.has(ref.Object))
	s.fail = nil
	require.NoError(t, f.Release(ctx, base.FileTypeTable, 7))
	require.False(t, s.has(ref.Object), "the retried release left the object")
	require.NoError(t, f.Release(ctx, base.FileTypeTable, 7), "a third release: nothing left to do")
}

// TestFilesOpenCopy: OpenCopy copies a shared file whole, taking the
// parts the cache holds from it and fetching only the others (each once,
// none kept in the cache); closing the copy deletes it. It declines a
// file with a whole local copy, one the cache holds half of, one not
// shared, and on a read-only Files; a failed GET fails it and leaves no
// file behind.
func TestFilesOpenCopy(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	const part = 1024
	f := newTestFiles(t, fs, s, -1, part)
	data, _ := shareRemoteOnly(t, f, fs, 5, 20*part+77, 11)
	require.NoError(t, f.Start())

	// Two parts cached by a read.
	file, err := f.Open(base.FileTypeTable, 5)
	require.NoError(t, err)
	buf := make([]byte, 2*part)
	_, err = file.ReadAt(buf, 3*part)
	require.NoError(t, err)
	f.keeping.Wait()
	gets, cached := s.getCount(), f.Stats().CachedBytes
	require.Equal(t, 2, gets)

	c, ok, err := f.OpenCopy(ctx, base.FileTypeTable, 5)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, gets+19, s.getCount(), "the copy fetches the 19 parts the cache lacks, once each")
	require.Equal(t, cached, f.Stats().CachedBytes, "the copy's parts went into the cache")
	got := make([]byte, len(data))
	n, err := c.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.Equal(t, data, got)
	require.Equal(t, 1, countCopies(t, fs))
	require.NoError(t, c.Close())
	require.Zero(t, countCopies(t, fs), "a copy left after Close")

	// Declined: not shared; mostly cached; a whole local copy.
	_, ok, err = f.OpenCopy(ctx, base.FileTypeTable, 9)
	require.NoError(t, err)
	require.False(t, ok)
	shareRemoteOnly(t, f, fs, 6, 3*part, 12)
	file, err = f.Open(base.FileTypeTable, 6)
	require.NoError(t, err)
	_, err = file.ReadAt(make([]byte, 2*part), 0)
	require.NoError(t, err)
	f.keeping.Wait()
	_, ok, err = f.OpenCopy(ctx, base.FileTypeTable, 6)
	require.NoError(t, err)
	require.False(t, ok, "two of three parts cached")
	local := writeLocal(t, fs, 7, 4*part, 13)
	ref7, err := f.Share(ctx, base.FileTypeTable, 7, int64(len(local)))
	require.NoError(t, err)
	f.Track(base.FileTypeTable, 7, ref7, int64(len(local)), true)
	_, ok, err = f.OpenCopy(ctx, base.FileTypeTable, 7)
	require.NoError(t, err)
	require.False(t, ok)

	// A failed GET.
	s.failOp("get", errors.New("injected"))
	_, ok, err = f.OpenCopy(ctx, base.FileTypeTable, 5)
	require.ErrorContains(t, err, "injected")
	require.False(t, ok)
	require.Zero(t, countCopies(t, fs), "a copy left after a failed copy")
	s.failOp("get", nil)

	// Read-only.
	ro, err := New(Options{Store: s, FS: fs, Dir: "db", Instance: testInstance, PartSize: part, ReadOnly: true})
	require.NoError(t, err)
	ro.Track(base.FileTypeTable, 5, manifest.SharedRef{Object: ObjectName(testInstance, base.FileTypeTable, 5)}, int64(len(data)), false)
	_, ok, err = ro.OpenCopy(ctx, base.FileTypeTable, 5)
	require.NoError(t, err)
	require.False(t, ok)
}

// TestFilesStartDropsCopies: a copy OpenCopy made and a crash left (never
// closed) is deleted by the next Start.
func TestFilesStartDropsCopies(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db", 0o755))
	s := newMemStore()
	const part = 1024
	f := newTestFiles(t, fs, s, -1, part)
	_, ref := shareRemoteOnly(t, f, fs, 5, 6*part, 21)
	require.NoError(t, f.Start())
	c, ok, err := f.OpenCopy(ctx, base.FileTypeTable, 5)
	require.NoError(t, err)
	require.True(t, ok)
	_ = c // not closed: the process dies
	require.Equal(t, 1, countCopies(t, fs))

	g := newTestFiles(t, fs, s, -1, part)
	g.Track(base.FileTypeTable, 5, ref, 6*part, false)
	require.NoError(t, g.Start())
	require.Zero(t, countCopies(t, fs))
}

// countCopies counts OpenCopy's files in the cache directory of "db".
func countCopies(t *testing.T, fs vfs.FS) (n int) {
	t.Helper()
	names, err := fs.List("db/" + CacheDirName)
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasPrefix(name, copyPrefix) {
			n++
		}
	}
	return n
}
