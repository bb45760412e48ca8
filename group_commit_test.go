package strata

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
	"github.com/stretchr/testify/require"
)

// TestGroupCommitSharesSyncs: concurrent Sync writers are committed in
// groups, so the WAL is synced fewer times than there are writes, and every
// write is readable afterwards.
func TestGroupCommitSharesSyncs(t *testing.T) {
	var walSyncs atomic.Int64
	fs := vfs.NewErrorFS(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			walSyncs.Add(1)
			// A disk whose sync takes a while, as real ones do: writers
			// arriving meanwhile queue behind the leader.
			time.Sleep(200 * time.Microsecond)
		}
		return nil
	}))
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := db.Set([]byte(fmt.Sprintf("w%d-%d", w, i)), []byte("v"), Sync); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	syncs := walSyncs.Load()
	t.Logf("%d Sync writes took %d WAL syncs", writers*each, syncs)
	require.Less(t, syncs, int64(writers*each/2), "writers did not share syncs")
	// Every write committed by another's group waited for it: at least
	// one per write beyond the groups (each group made one WAL sync).
	m := db.Metrics()
	require.Equal(t, uint64(writers*each), m.Latency.Commit.Count)
	require.GreaterOrEqual(t, m.Latency.CommitWait.Count, uint64(writers*each)-uint64(syncs))
	require.LessOrEqual(t, m.Latency.CommitWait.Count, uint64(writers*each))
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			_, err := db.Get([]byte(fmt.Sprintf("w%d-%d", w, i)))
			require.NoError(t, err)
		}
	}
	require.NoError(t, db.Close())
}

// blockingObserver holds the writer that commits a value of length
// holdLen in ObserveWrite until release is closed, and records which
// goroutine committed each value length.
type blockingObserver struct {
	vlog.Threshold
	holdLen int
	held    chan struct{}
	release chan struct{}
	mu      sync.Mutex
	by      map[int]uint64 // value length -> committing goroutine
}

func (o *blockingObserver) ObserveWrite(_, valueLen int) {
	o.mu.Lock()
	o.by[valueLen] = goroutineID()
	o.mu.Unlock()
	if valueLen == o.holdLen {
		close(o.held)
		<-o.release
	}
}
func (o *blockingObserver) ObserveRead(int, bool)                       {}
func (o *blockingObserver) ObserveScan(int, int)                        {}
func (o *blockingObserver) ObserveGarbage(base.FileNum, uint64, uint64) {}

// goroutineID parses the calling goroutine's number from its stack header.
func goroutineID() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _ := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	return id
}

// TestLeaderCommitsQueuedWrites: writes that queue while a leader commits
// are committed by that leader, not handed to a parked writer that must
// first get a P; a write that syncs, and the writes behind it, are left to
// the next leader.
func TestLeaderCommitsQueuedWrites(t *testing.T) {
	obs := &blockingObserver{Threshold: vlog.Threshold(1 << 20), holdLen: 1,
		held: make(chan struct{}), release: make(chan struct{}), by: map[int]uint64{}}
	db, err := Open("db", &Options{FS: vfs.NewMem(), SeparationPolicy: obs})
	require.NoError(t, err)
	defer db.Close()

	type result struct {
		id  uint64
		err error
	}
	results := make(map[int]chan result)
	write := func(valueLen int, o *WriteOptions) {
		ch := make(chan result, 1)
		results[valueLen] = ch
		go func() {
			id := goroutineID()
			ch <- result{id, db.Set([]byte(fmt.Sprint("k", valueLen)), make([]byte, valueLen), o)}
		}()
	}
	queued := func(n int) {
		require.Eventually(t, func() bool {
			db.commit.mu.Lock()
			defer db.commit.mu.Unlock()
			return len(db.commit.queue) == n
		}, 10*time.Second, time.Millisecond)
	}
	write(1, NoSync) // the leader, held in its group
	<-obs.held
	write(2, NoSync)
	queued(2)
	write(3, NoSync)
	queued(3)
	write(4, Sync)
	queued(4)
	write(5, NoSync)
	queued(5)
	close(obs.release)

	got := map[int]result{}
	for n, ch := range results {
		got[n] = <-ch
		require.NoError(t, got[n].err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	leader := got[1].id
	require.Equal(t, leader, obs.by[1])
	require.Equal(t, leader, obs.by[2], "queued write not committed by the leader")
	require.Equal(t, leader, obs.by[3], "queued write not committed by the leader")
	require.Equal(t, got[4].id, obs.by[4], "the sync write leads its own group")
	require.Equal(t, got[4].id, obs.by[5], "the write behind a sync joins its group")
	for n := 1; n <= 5; n++ {
		v, err := db.Get([]byte(fmt.Sprint("k", n)))
		require.NoError(t, err)
		require.Len(t, v, n)
	}
}
