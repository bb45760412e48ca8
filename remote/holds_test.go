package remote

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestHoldEncoding: a hold decodes to the objects it was written with,
// and one cut short, damaged or miscounted is refused.
func TestHoldEncoding(t *testing.T) {
	for _, objects := range [][]string{nil, {"data/1-2-x"}, {"shared/aa/000001.sst", "shared/aa/000002.vlog", "data/3-4-y"}} {
		got, err := DecodeHold(EncodeHold(objects))
		require.NoError(t, err)
		require.Equal(t, objects, got)
	}
	good := EncodeHold([]string{"shared/aa/000001.sst", "data/3-4-y"})
	bad := map[string][]byte{
		"empty":        nil,
		"magic only":   []byte(holdMagic),
		"cut":          good[:len(good)-5],
		"no last line": good[:bytes.LastIndexByte(good[:len(good)-1], '\n')+1],
		"flipped":      bytes.Replace(good, []byte("000001"), []byte("000009"), 1),
		"count":        bytes.Replace(good, []byte("end 2"), []byte("end 3"), 1),
		"other magic":  append([]byte("strata-hold 2\n"), good[len(holdMagic):]...),
	}
	for name, data := range bad {
		_, err := DecodeHold(data)
		require.Error(t, err, name)
	}
	names := map[string]bool{HoldName("i-0123456789abcdef"): true, "holds/": false, "holds/a/b": false, "refs/holds/x": false}
	for name, want := range names {
		h, ok := ParseHoldName(name)
		require.Equal(t, want, ok, name)
		if ok {
			require.Equal(t, "i-0123456789abcdef", h)
		}
	}
}

// TestHolds: a hold keeps the objects it names from every deletion
// (DropRef, DeleteUnheld, Sweep) as a marker would, and a damaged hold
// keeps every object; ConvertHold leaves the holder's markers in its
// place, after which the objects go with their last marker; DropHold
// deletes the hold and the objects no one else holds.
func TestHolds(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	const holder = "i-0123456789abcdef"
	objs := []string{"shared/aa/000001.sst", "shared/aa/000002.vlog", "data/1-2-x"}
	for _, o := range objs {
		require.NoError(t, AddRef(ctx, s, o, RegistryHolder))
		require.NoError(t, s.Put(ctx, o, bytes.NewReader([]byte("x")), 1))
	}
	require.NoError(t, PutHold(ctx, s, holder, objs[:2]))
	held, err := Held(ctx, s)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{holder: objs[:2]}, held)

	// The registry lets go of all three: the held two stay.
	for _, o := range objs {
		deleted, err := DropRef(ctx, s, o, RegistryHolder)
		require.NoError(t, err)
		require.Equal(t, o == objs[2], deleted, o)
	}
	swept, err := Sweep(ctx, s)
	require.NoError(t, err)
	require.Empty(t, swept)
	for _, o := range objs[:2] {
		require.True(t, s.has(o), o)
	}

	// A damaged hold keeps everything: deletions fail.
	good := s.objects[HoldName(holder)]
	s.objects[HoldName(holder)] = good[:len(good)-3]
	_, err = DeleteUnheld(ctx, s, objs[0])
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	_, err = Sweep(ctx, s)
	require.Error(t, err)
	require.True(t, s.has(objs[0]))
	_, _, err = ReadHold(ctx, s, holder)
	require.True(t, errors.Is(err, base.ErrCorruption), "%v", err)
	s.objects[HoldName(holder)] = good

	// Converted into markers, it is gone, and the markers hold.
	require.NoError(t, ConvertHold(ctx, s, holder))
	require.False(t, s.has(HoldName(holder)))
	require.NoError(t, ConvertHold(ctx, s, holder), "converting no hold")
	for _, o := range objs[:2] {
		h, err := Holders(ctx, s, o)
		require.NoError(t, err)
		require.Equal(t, []string{holder}, h)
	}
	deleted, err := DropRef(ctx, s, objs[0], holder)
	require.NoError(t, err)
	require.True(t, deleted)

	// A failed conversion leaves the hold: the objects stay held.
	require.NoError(t, PutHold(ctx, s, holder, objs[1:2]))
	s.failOp("put", errors.New("injected"))
	require.Error(t, ConvertHold(ctx, s, holder))
	s.fail = nil
	require.True(t, s.has(HoldName(holder)))

	// DropHold: the hold goes, and with it the object only it held.
	_, err = DropRef(ctx, s, objs[1], holder) // no marker: the hold still names it
	require.NoError(t, err)
	require.True(t, s.has(objs[1]), "deleted while the hold names it")
	require.NoError(t, DropHold(ctx, s, holder, objs[1:2]))
	require.False(t, s.has(HoldName(holder)))
	require.False(t, s.has(objs[1]))
}
