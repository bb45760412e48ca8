package strata

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// convertGate holds the Puts of instances' reference markers (what
// remote.ConvertHold writes) until open is closed.
type convertGate struct {
	checkpoint.Store
	open chan struct{}
}

func (s *convertGate) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	if _, holder, ok := remote.ParseMarker(name); ok {
		if _, inst := remote.HolderInstance(holder); inst {
			select {
			case <-s.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return s.Store.Put(ctx, name, r, size)
}

// holdsListHook runs before once, just before its first List of the
// holds: DeleteUnheld lists an object's markers, then the holds.
type holdsListHook struct {
	checkpoint.Store
	once   sync.Once
	before func()
}

func (s *holdsListHook) List(ctx context.Context, prefix string) ([]checkpoint.ObjectInfo, error) {
	if prefix == "holds/" {
		s.once.Do(s.before)
	}
	return s.Store.List(ctx, prefix)
}

// TestHoldConversionRacesDeletion: instance b, opened from checkpoint C,
// holds C's objects by its hold. The registry retires C; its sweep drops
// the registry's marker on an object and DeleteUnheld lists the object's
// markers (none: b holds it by the hold alone). Then b's share loop
// converts its hold (markers Put, then the hold deleted), and only then
// does DeleteUnheld list the holds: it finds neither b's marker nor its
// hold, and deletes an object the live instance b holds and reads.
func TestHoldConversionRacesDeletion(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	store, err := checkpoint.NewLocalStoreFS(fs, "store")
	require.NoError(t, err)

	// a, without shared files: its checkpoint's objects are data/ objects
	// the registry alone marks.
	want, st := checkpointLocal(t, fs, store, 1500, true)

	gate := &convertGate{Store: store, open: make(chan struct{})}
	b, err := OpenFromStore(ctx, gate, st.ID, "b", &Options{FS: fs, SharedCacheSize: 1, SharedFromLevel: 1})
	require.NoError(t, err)
	defer b.Close()
	bHolder := remote.InstanceHolder(b.shared.files.Instance())
	held, err := remote.Held(ctx, store)
	require.NoError(t, err)
	require.NotEmpty(t, held[bHolder], "b holds the checkpoint's objects by its hold")

	// The registry retires C. At its first List of the holds (after a
	// DeleteUnheld listed its object's markers), b's conversion runs to
	// its end.
	hook := &holdsListHook{Store: store, before: func() {
		close(gate.open)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			_, found, err := remote.ReadHold(context.Background(), store, bHolder)
			if err == nil && !found {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Errorf("b's hold was not converted")
	}}
	u2, err := checkpoint.NewUploader(hook, nil)
	require.NoError(t, err)
	_, err = u2.Retire(ctx, 0)
	require.NoError(t, err)
	b.waitSharedIdle()

	// Every object b's marker is on must still be in the store.
	marked, err := remote.Marked(ctx, store)
	require.NoError(t, err)
	var lost []string
	for object, holders := range marked {
		for _, h := range holders {
			if h != bHolder {
				continue
			}
			if _, err := store.Get(ctx, object, 0, -1); errors.Is(err, remote.ErrNotExist) {
				lost = append(lost, object)
			}
		}
	}
	got, rerr := readAll(t, b)
	t.Logf("b's read after the retire: %v", rerr)
	require.Empty(t, lost, "objects deleted while the live instance b marks them")
	require.NoError(t, rerr, "b reads its state")
	require.Equal(t, want, got)
}
