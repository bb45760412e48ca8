package strata

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// holdFS is a MemFS whose syncs of files with a given suffix can be held:
// hold arms it, and the next such sync signals entered and waits for
// release. It lets a test stop the commit leader at a known point while
// other operations queue behind it.
type holdFS struct {
	*vfs.ErrorFS
	mem      *vfs.MemFS
	suffix   string
	armed    atomic.Bool
	entered  chan struct{}
	released chan struct{}
}

func newHoldFS(suffix string) *holdFS {
	h := &holdFS{mem: vfs.NewMem(), suffix: suffix}
	h.ErrorFS = vfs.NewErrorFS(h.mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, h.suffix) && h.armed.CompareAndSwap(true, false) {
			h.entered <- struct{}{}
			<-h.released
		}
		return nil
	}))
	return h
}

// hold arms the next sync; the returned function releases it.
func (h *holdFS) hold() (release func()) {
	h.entered = make(chan struct{})
	h.released = make(chan struct{})
	h.armed.Store(true)
	return func() { close(h.released) }
}

// queued returns the number of operations in d's commit pipeline (the
// leader among them).
func queued(d *DB) int {
	d.commit.mu.Lock()
	defer d.commit.mu.Unlock()
	return len(d.commit.queue)
}

// waitQueued waits until n operations are queued in the commit pipeline
// (the leader among them); the operation expected to queue last must not
// return before (its result comes on early).
func waitQueued(t *testing.T, d *DB, n int, early chan error) {
	t.Helper()
	for queued(d) < n {
		select {
		case err := <-early:
			t.Fatalf("returned without queueing behind the leader: %v", err)
		default:
		}
		runtime.Gosched()
	}
}

// TestBulkLoadSyncWriteRace: whether a Sync write is refused during a bulk
// load is decided in commit order, not when the write is called. A Sync
// write queued behind BeginBulkLoad is refused (before, it was
// acknowledged and skipped the WAL, and a crash lost it); one queued
// behind EndBulkLoad is committed and logged (before, it was refused
// because the load had not ended yet when it was called). Set and Apply
// alike; a crash follows each.
func TestBulkLoadSyncWriteRace(t *testing.T) {
	for _, apply := range []bool{false, true} {
		write := func(db *DB, key string) error {
			if !apply {
				return db.Set([]byte(key), []byte("v-"+key), Sync)
			}
			b := db.NewBatch()
			require.NoError(t, b.Set([]byte(key), []byte("v-"+key)))
			require.NoError(t, b.Set([]byte(key+"2"), []byte("v-"+key)))
			return db.Apply(b, Sync)
		}
		name := map[bool]string{false: "set", true: "apply"}[apply]

		t.Run(name+"/behind-begin", func(t *testing.T) {
			fs := newHoldFS(".log")
			db, err := Open("db", &Options{FS: fs})
			require.NoError(t, err)
			release := fs.hold()
			leader := make(chan error, 1)
			go func() { leader <- db.Set([]byte("a"), []byte("a"), Sync) }()
			<-fs.entered // the leader waits in its WAL sync
			begin := make(chan error, 1)
			go func() { begin <- db.BeginBulkLoad() }()
			waitQueued(t, db, 2, begin)
			w := make(chan error, 1)
			go func() { w <- write(db, "w") }()
			waitQueued(t, db, 3, w)
			release()
			require.NoError(t, <-leader)
			require.NoError(t, <-begin)
			werr := <-w
			require.True(t, errors.Is(werr, ErrBulkLoadSync), "a Sync write committed after BeginBulkLoad: %v", werr)
			checkAfterCrash(t, fs.mem, map[string]bool{"a": true, "w": werr == nil})
			require.NoError(t, db.Close())
		})

		t.Run(name+"/behind-end", func(t *testing.T) {
			fs := newHoldFS(".sst")
			db, err := Open("db", &Options{FS: fs})
			require.NoError(t, err)
			require.NoError(t, db.BeginBulkLoad())
			require.NoError(t, db.Set([]byte("bulk"), []byte("bulk"), NoSync))
			release := fs.hold()
			end := make(chan error, 1)
			go func() { end <- db.EndBulkLoad() }()
			<-fs.entered // EndBulkLoad's flush waits in its table's sync
			w := make(chan error, 1)
			go func() { w <- write(db, "w") }()
			waitQueued(t, db, 2, w)
			release()
			require.NoError(t, <-end)
			require.NoError(t, <-w, "a Sync write committed after EndBulkLoad was refused")
			checkAfterCrash(t, fs.mem, map[string]bool{"bulk": true, "w": true})
			require.NoError(t, db.Close())
		})
	}
}

// checkAfterCrash opens a crash clone of fs and checks which keys it has.
func checkAfterCrash(t *testing.T, fs *vfs.MemFS, want map[string]bool) {
	t.Helper()
	db, err := Open("db", &Options{FS: fs.CrashClone(vfs.CrashOptions{})})
	require.NoError(t, err)
	defer db.Close()
	for k, present := range want {
		_, err := db.Get([]byte(k))
		if present {
			require.NoError(t, err, "acknowledged key %q lost in a crash", k)
		} else {
			require.True(t, errors.Is(err, ErrNotFound), "key %q: %v", k, err)
		}
	}
}
