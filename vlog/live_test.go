package vlog

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLiveWriterReads: values are readable from the moment Add returns,
// from the buffer, the file, or both (a record straddling the last write),
// while readers run concurrently with the writer; after Finish the file
// reads back through a Reader and the LiveWriter refuses.
//
// On the disk filesystem the file is mapped (Map) with a window of 4 MiB
// that the 10 MB of records outgrow: the records the flusher has written
// inside it are read through the mapping, the others as in memory.
func TestLiveWriterReads(t *testing.T) {
	t.Run("mem", func(t *testing.T) { testLiveWriterReads(t, vfs.NewMem(), "", 0) })
	t.Run("mapped", func(t *testing.T) {
		var mapped atomic.Int64
		testHookMappedRead = func() { mapped.Add(1) }
		defer func() { testHookMappedRead = nil }()
		testLiveWriterReads(t, vfs.Default, t.TempDir(), 3<<20)
		require.Positive(t, mapped.Load())
	})
}

// liveFile creates value log 9 in dir of fs and a LiveWriter for it,
// mapped with a window of window bytes (none if 0).
func liveFile(t *testing.T, fs vfs.FS, dir string, window int64) (*LiveWriter, string) {
	name := filepath.Join(dir, "000009.vlog")
	f, err := fs.Create(name)
	require.NoError(t, err)
	lw := NewLiveWriter(f, 9)
	lw.Map(window)
	if _, isMem := fs.(*vfs.MemFS); !isMem && window > 0 {
		require.NotNil(t, lw.mapped.Load(), "a file of the disk filesystem maps")
	}
	return lw, name
}

func testLiveWriterReads(t *testing.T, fs vfs.FS, dir string, window int64) {
	lw, name := liveFile(t, fs, dir, window)
	type rec struct {
		key, value []byte
		p          Pointer
	}
	var (
		mu   sync.Mutex
		recs []rec
	)
	value := func(i int) []byte {
		// Records of 1 to 70 KB, some straddling the Writer's writes.
		v := bytes.Repeat([]byte{byte(i)}, 1000+(i*7919)%70000)
		copy(v, fmt.Sprintf("value %d", i))
		return v
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readErr error
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				n := len(recs)
				var r rec
				if n > 0 {
					r = recs[(n*31)%n]
				}
				mu.Unlock()
				if n == 0 {
					continue
				}
				got, err := lw.Get(r.p, r.key, nil)
				if err == nil && !bytes.Equal(got, r.value) {
					err = fmt.Errorf("wrong value at %s", r.p)
				}
				if err != nil {
					mu.Lock()
					readErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		key := []byte(fmt.Sprintf("key%03d", i))
		p, err := lw.Add(key, value(i))
		require.NoError(t, err)
		got, err := lw.Get(p, key, nil)
		require.NoError(t, err)
		require.Equal(t, value(i), got)
		mu.Lock()
		recs = append(recs, rec{key, value(i), p})
		mu.Unlock()
		if i%50 == 49 {
			require.NoError(t, lw.Sync())
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, readErr)

	// A wrong key or a pointer past the end is corruption, not a value.
	_, err := lw.Get(recs[3].p, []byte("other"), nil)
	require.ErrorIs(t, err, base.ErrCorruption)
	bad := recs[len(recs)-1].p
	bad.Offset += 1 << 20
	_, err = lw.Get(bad, recs[len(recs)-1].key, nil)
	require.ErrorIs(t, err, base.ErrCorruption)

	meta, err := lw.Finish()
	require.NoError(t, err)
	require.Equal(t, uint64(len(recs)), meta.Records)
	require.Same(t, meta, lw.Finished())
	_, err = lw.Get(recs[0].p, recs[0].key, nil)
	require.True(t, errors.Is(err, errFinished))
	require.Nil(t, lw.mapped.Load(), "unmapped once finished")
	rf, err := fs.Open(name)
	require.NoError(t, err)
	r, err := NewReader(rf, 9, int64(meta.Size), ReaderOptions{})
	require.NoError(t, err)
	require.True(t, r.Finished())
	for _, rc := range recs {
		got, err := r.Get(rc.p, rc.key)
		require.NoError(t, err)
		require.Equal(t, rc.value, got)
	}
	require.NoError(t, r.Close())
}

// TestLiveWriterReadsRacingEnd: readers go on through Finish and through
// Abort, which close the file: each read gives the value, or says the
// file is finished (or abandoned), never a read of a closed file.
func TestLiveWriterReadsRacingEnd(t *testing.T) {
	for _, abort := range []bool{false, true} {
		for _, mapped := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/mapped=%v", map[bool]string{false: "finish", true: "abort"}[abort], mapped), func(t *testing.T) {
				fs, dir := vfs.FS(vfs.NewMem()), ""
				if mapped {
					fs, dir = vfs.Default, t.TempDir()
				}
				lw, _ := liveFile(t, fs, dir, 8<<20)
				var ps []Pointer
				for i := range 2000 { // 4 MiB: records in the file and in buffers
					p, err := lw.Add([]byte(fmt.Sprintf("key%04d", i)), bytes.Repeat([]byte{byte(i)}, 2048))
					require.NoError(t, err)
					ps = append(ps, p)
				}
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				start := make(chan struct{})
				for g := range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for j := 0; ; j++ {
							i := (j*7919 + g*31) % len(ps)
							got, err := lw.Get(ps[i], []byte(fmt.Sprintf("key%04d", i)), nil)
							if errors.Is(err, errFinished) || errors.Is(err, errAborted) {
								return
							}
							if err == nil && !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 2048)) {
								err = fmt.Errorf("wrong value for key%04d", i)
							}
							if err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				close(start)
				time.Sleep(time.Millisecond)
				if abort {
					lw.Abort()
				} else {
					_, err := lw.Finish()
					require.NoError(t, err)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
			})
		}
	}
}

// TestLiveWriterEndWaitsForMappedReads: Finish and Abort do not unmap the
// file while a Get reads a record through the mapping (the Get holds an
// epoch, not a lock): the end waits for the read, which returns the
// right value. (Finish also waits in the flusher's grace period after the
// footer; Abort, which writes nothing, waits only in unmap.)
func TestLiveWriterEndWaitsForMappedReads(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(map[bool]string{false: "finish", true: "abort"}[abort], func(t *testing.T) {
			lw, _ := liveFile(t, vfs.Default, t.TempDir(), 4<<20)
			var ps []Pointer
			for i := range 100 {
				p, err := lw.Add([]byte(fmt.Sprintf("key%04d", i)), bytes.Repeat([]byte{byte(i)}, 2048))
				require.NoError(t, err)
				ps = append(ps, p)
			}
			require.NoError(t, lw.Sync()) // every record in the file: read mapped

			// The read holds the mapping it loaded.
			proceed, got := heldGet(t, &testHookMappedRead, lw, ps[7], []byte("key0007"))

			ended := make(chan struct{})
			go func() {
				defer close(ended)
				if abort {
					lw.Abort()
				} else {
					_, err := lw.Finish()
					assert.NoError(t, err)
				}
			}()
			select {
			case <-ended:
				t.Fatal("the file ended (and was unmapped) under a mapped read")
			case <-time.After(100 * time.Millisecond):
			}
			close(proceed)
			r := <-got
			require.NoError(t, r.err)
			require.Equal(t, bytes.Repeat([]byte{7}, 2048), r.v)
			<-ended
			require.Nil(t, lw.mapped.Load())
		})
	}
}

// heldGet runs lw.Get(p, key) in a goroutine that, the first time it
// reaches the test hook *hook, waits there until release is closed. It
// returns once the read is at the hook; the read's result arrives on got.
func heldGet(t *testing.T, hook *func(), lw *LiveWriter, p Pointer, key []byte) (release chan struct{}, got chan heldResult) {
	t.Helper()
	at := make(chan struct{})
	release = make(chan struct{})
	var once sync.Once
	*hook = func() {
		once.Do(func() {
			close(at)
			<-release
		})
	}
	t.Cleanup(func() { *hook = nil })
	got = make(chan heldResult, 1)
	go func() {
		v, err := lw.Get(p, key, nil)
		got <- heldResult{v, err}
	}()
	<-at
	return release, got
}

type heldResult struct {
	v   []byte
	err error
}

// gatedFile holds every Write until its gate opens, and can fail them.
type gatedFile struct {
	vfs.File
	gate chan struct{}
	fail error
}

func (g *gatedFile) Write(p []byte) (int, error) {
	<-g.gate
	if g.fail != nil {
		return 0, g.fail
	}
	return g.File.Write(p)
}

// TestLiveWriterHandsOffWrites: full buffers go to the flusher, so Add
// returns while their write is held; the records read back from memory
// meanwhile; Sync returns only once they are in the file; a failed write
// reaches Add and Sync.
func TestLiveWriterHandsOffWrites(t *testing.T) {
	for _, failWrite := range []bool{false, true} {
		fs := vfs.NewMem()
		f, err := fs.Create("000009.vlog")
		require.NoError(t, err)
		g := &gatedFile{File: f, gate: make(chan struct{})}
		if failWrite {
			g.fail = errors.New("disk on fire")
		}
		lw := NewLiveWriter(g, 9)
		// Enough for two full buffers (one handed off, one filling).
		val := bytes.Repeat([]byte("v"), 64<<10)
		var ptrs []Pointer
		for i := 0; uint64(i)*uint64(len(val)) < writerBufSize+writerBufSize/2; i++ {
			p, err := lw.Add([]byte(fmt.Sprintf("k%04d", i)), val)
			require.NoError(t, err, "Add must not wait for the held write")
			ptrs = append(ptrs, p)
		}
		for i, p := range ptrs {
			got, err := lw.Get(p, []byte(fmt.Sprintf("k%04d", i)), nil)
			require.NoError(t, err)
			require.Equal(t, val, got)
		}
		synced := make(chan error, 1)
		go func() { synced <- lw.Sync() }()
		select {
		case err := <-synced:
			t.Fatalf("Sync returned %v while a write was held", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(g.gate)
		err = <-synced
		if failWrite {
			require.ErrorContains(t, err, "disk on fire")
			_, err = lw.Add([]byte("later"), val)
			require.ErrorContains(t, err, "disk on fire")
			// The records of the buffer that failed are not readable; a
			// read says why, and is not taken for corruption.
			_, err = lw.Get(ptrs[0], []byte("k0000"), nil)
			require.ErrorContains(t, err, "disk on fire")
			require.NotErrorIs(t, err, base.ErrCorruption)
			lw.Abort()
			continue
		}
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		require.Equal(t, int64(lw.Size()), st.Size(), "Sync leaves every byte in the file")
		_, err = lw.Finish()
		require.NoError(t, err)
	}
}

// TestLiveWriterReadsNewestAcrossReuse: readers that read the newest
// records, which sit in the buffers Add fills, the flusher writes and Add
// reuses, get every value right while buffers are recycled under them
// (run with -race: a reader copying from a buffer that is being refilled
// is a race the detector reports).
func TestLiveWriterReadsNewestAcrossReuse(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("000009.vlog")
	require.NoError(t, err)
	lw := NewLiveWriter(f, 9)
	type rec struct {
		key []byte
		p   Pointer
	}
	value := func(i int) []byte {
		v := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 100+i%150)
		copy(v, fmt.Sprintf("v%d.", i))
		return v
	}
	var (
		mu   sync.Mutex
		recs []rec
	)
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				mu.Lock()
				k := len(recs)
				if k == 0 {
					mu.Unlock()
					continue
				}
				i := k - 1 - (n*7+g)%min(k, 64) // one of the newest 64
				r := recs[i]
				mu.Unlock()
				got, err := lw.Get(r.p, r.key, nil)
				if err == nil && !bytes.Equal(got, value(i)) {
					err = fmt.Errorf("record %d at %s: wrong value", i, r.p)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// About 12 MiB: six buffers, four of them reused.
	for i := 0; lw.Size() < 6*writerBufSize; i++ {
		key := []byte(fmt.Sprintf("key%07d", i))
		p, err := lw.Add(key, value(i))
		require.NoError(t, err)
		mu.Lock()
		recs = append(recs, rec{key, p})
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	for range 2 {
		require.NoError(t, <-errs)
	}
	lw.mu.Lock()
	reused := lw.reused
	lw.mu.Unlock()
	require.GreaterOrEqual(t, reused, 2, "buffers were not recycled: the test did not reach reuse")
	for i, r := range recs {
		got, err := lw.Get(r.p, r.key, nil)
		require.NoError(t, err)
		require.Equal(t, value(i), got)
	}
	_, err = lw.Finish()
	require.NoError(t, err)
}

// TestLiveWriterKeepsBuffersOfReaders: a buffer a reader may still copy
// from is not reused. The reader loads a view while a buffer waits for
// the flusher, and stays between that and its copy while the buffer is
// written and many more are filled; it must still read its record right.
func TestLiveWriterKeepsBuffersOfReaders(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("000009.vlog")
	require.NoError(t, err)
	g := &gatedFile{File: f, gate: make(chan struct{})}
	lw := NewLiveWriter(g, 9)
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8), 7}, 300) }
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }
	var ptrs []Pointer
	add := func() error {
		i := len(ptrs)
		p, err := lw.Add(key(i), value(i))
		ptrs = append(ptrs, p)
		return err
	}
	// One buffer handed off and held at the gate; its first records are
	// only in memory.
	for lw.Size() < writerBufSize+writerBufSize/4 {
		require.NoError(t, add())
	}
	const target = 10
	resume, got := heldGet(t, &testHookBeforeCopy, lw, ptrs[target], key(target))
	// The held buffer is written now, and four more are filled: without a
	// grace period the flusher would hand it back to Add to refill.
	close(g.gate)
	added := make(chan error, 1)
	go func() {
		var err error
		for lw.Size() < 6*writerBufSize && err == nil {
			err = add()
		}
		added <- err
	}()
	time.Sleep(100 * time.Millisecond)
	close(resume)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, value(target), r.v)
	require.NoError(t, <-added)
	for i, p := range ptrs {
		v, err := lw.Get(p, key(i), nil)
		require.NoError(t, err)
		require.Equal(t, value(i), v)
	}
	_, err = lw.Finish()
	require.NoError(t, err)
}
