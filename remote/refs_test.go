package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestRefs: an object goes when its last holder drops its marker, not
// before; Sweep deletes shared objects no marker holds (what a crash
// between a marker's deletion and the object's leaves), and nothing else.
func TestRefs(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	obj := "shared/0123456789abcdef/000007.sst"
	require.NoError(t, AddRef(ctx, s, obj, "i-a"))
	require.NoError(t, s.Put(ctx, obj, bytes.NewReader([]byte("data")), 4))
	require.NoError(t, AddRef(ctx, s, obj, RegistryHolder))
	h, err := Holders(ctx, s, obj)
	require.NoError(t, err)
	require.Equal(t, []string{"i-a", RegistryHolder}, h)

	deleted, err := DropRef(ctx, s, obj, "i-a")
	require.NoError(t, err)
	require.False(t, deleted)
	require.True(t, s.has(obj), "deleted while the registry holds it")
	deleted, err = DropRef(ctx, s, obj, RegistryHolder)
	require.NoError(t, err)
	require.True(t, deleted)
	require.False(t, s.has(obj))

	// Sweep: an unmarked shared object goes; a marked one and objects
	// outside shared/ stay.
	for _, name := range []string{"shared/aa/000001.sst", "shared/aa/000002.sst", "data/1-2-x"} {
		require.NoError(t, s.Put(ctx, name, bytes.NewReader(nil), 0))
	}
	require.NoError(t, AddRef(ctx, s, "shared/aa/000002.sst", "i-b"))
	swept, err := Sweep(ctx, s)
	require.NoError(t, err)
	require.Equal(t, []string{"shared/aa/000001.sst"}, swept)
	require.True(t, s.has("shared/aa/000002.sst"))
	require.True(t, s.has("data/1-2-x"))
	marked, err := Marked(ctx, s)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"shared/aa/000002.sst": {"i-b"}}, marked)
}

func TestInstanceID(t *testing.T) {
	id := NewInstanceID()
	require.NoError(t, CheckInstanceID(id))
	require.NotEqual(t, id, NewInstanceID())
	for _, bad := range []string{"", "abc", "0123456789ABCDEF", "0123456789abcdeg", "0123456789abcdef0"} {
		require.Error(t, CheckInstanceID(bad), bad)
	}
	require.Equal(t, "shared/0123456789abcdef/000012.vlog", ObjectName("0123456789abcdef", base.FileTypeVlog, 12))
}

// TestMarkerNames: ParseMarker and HolderInstance read back what
// markerName and InstanceHolder write, and refuse anything else.
func TestMarkerNames(t *testing.T) {
	obj, holder, ok := ParseMarker(MarkerName("shared/0123456789abcdef/000007.sst", "i-0123456789abcdef"))
	require.True(t, ok)
	require.Equal(t, "shared/0123456789abcdef/000007.sst", obj)
	require.Equal(t, "i-0123456789abcdef", holder)
	for _, bad := range []string{"refs/", "refs/x", "refs/x/", "data/x/registry", "refs//registry"} {
		_, _, ok := ParseMarker(bad)
		require.False(t, ok, bad)
	}
	id, ok := HolderInstance(InstanceHolder("0123456789abcdef"))
	require.True(t, ok)
	require.Equal(t, "0123456789abcdef", id)
	for _, bad := range []string{RegistryHolder, "i-", "i-0123", "x-0123456789abcdef"} {
		_, ok := HolderInstance(bad)
		require.False(t, ok, bad)
	}
}

// TestDeleteUnheld: an object goes only when no marker holds it at the
// moment of the deletion.
func TestDeleteUnheld(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	for _, name := range []string{"shared/aa/000001.sst", "data/1-2-x"} {
		require.NoError(t, s.Put(ctx, name, bytes.NewReader(nil), 0))
	}
	require.NoError(t, AddRef(ctx, s, "data/1-2-x", RegistryHolder))
	deleted, err := DeleteUnheld(ctx, s, "data/1-2-x")
	require.NoError(t, err)
	require.False(t, deleted)
	require.True(t, s.has("data/1-2-x"))
	deleted, err = DeleteUnheld(ctx, s, "shared/aa/000001.sst")
	require.NoError(t, err)
	require.True(t, deleted)
	require.False(t, s.has("shared/aa/000001.sst"))
}

// TestAddRefs: every object gets the holder's marker; on a failure the
// markers written are returned with the error, and no request is made
// after it.
func TestAddRefs(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	var objects []string
	for i := range 3 * refsParallel {
		objects = append(objects, ObjectName("0123456789abcdef", base.FileTypeVlog, base.FileNum(i+1)))
	}
	added, err := AddRefs(ctx, s, objects, "i-a")
	require.NoError(t, err)
	require.Equal(t, objects, added)
	marked, err := Marked(ctx, s)
	require.NoError(t, err)
	require.Len(t, marked, len(objects))
	for _, o := range objects {
		require.Equal(t, []string{"i-a"}, marked[o], o)
	}

	s = newMemStore()
	failed := errors.New("injected")
	bad := MarkerName(objects[refsParallel], "i-b")
	s.fail = func(op, name string) error {
		if op == "put" && name == bad {
			return failed
		}
		return nil
	}
	added, err = AddRefs(ctx, s, objects, "i-b")
	require.ErrorIs(t, err, failed)
	require.NotContains(t, added, objects[refsParallel])
	marked, err = Marked(ctx, s)
	require.NoError(t, err)
	require.Len(t, marked, len(added), "a marker written is not reported")
	for _, o := range added {
		require.Equal(t, []string{"i-b"}, marked[o], o)
	}
	require.Less(t, s.puts, len(objects), "requests went on after the failure")
}

// barrierStore holds every Put until n are in flight at once.
type barrierStore struct {
	*memStore
	n       int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (b *barrierStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	b.mu.Lock()
	if b.waiting++; b.waiting == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.memStore.Put(ctx, name, r, size)
}

// TestAddRefsInParallel: AddRefs has refsParallel markers in flight at
// once (one after the other, the first would wait for ever).
func TestAddRefsInParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &barrierStore{memStore: newMemStore(), n: refsParallel, open: make(chan struct{})}
	var objects []string
	for i := range refsParallel {
		objects = append(objects, ObjectName("0123456789abcdef", base.FileTypeTable, base.FileNum(i+1)))
	}
	added, err := AddRefs(ctx, s, objects, "i-a")
	require.NoError(t, err)
	require.Equal(t, objects, added)
}
