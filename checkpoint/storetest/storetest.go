// Package storetest checks that a checkpoint.Store behaves as the
// interface says: the same tests run against the local store and any
// other implementation (the S3 store runs them against a real server).
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/strata-db/strata/checkpoint"
)

// Run runs the conformance tests on stores made by newStore, each empty.
func Run(t *testing.T, newStore func(t *testing.T) checkpoint.Store) {
	ctx := context.Background()
	put := func(t *testing.T, s checkpoint.Store, name, data string) {
		t.Helper()
		if err := s.Put(ctx, name, strings.NewReader(data), int64(len(data))); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
	get := func(t *testing.T, s checkpoint.Store, name string, off, n int64) (string, error) {
		t.Helper()
		rc, err := s.Get(ctx, name, off, n)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	t.Run("PutGetRanges", func(t *testing.T) {
		s := newStore(t)
		put(t, s, "a/b/obj", "0123456789")
		for _, c := range []struct {
			off, n int64
			want   string
		}{{0, -1, "0123456789"}, {0, 10, "0123456789"}, {3, 4, "3456"}, {9, 1, "9"}, {10, 0, ""}, {4, -1, "456789"}} {
			got, err := get(t, s, "a/b/obj", c.off, c.n)
			if err != nil || got != c.want {
				t.Fatalf("get %d+%d: %q, %v; want %q", c.off, c.n, got, err, c.want)
			}
		}
		if _, err := get(t, s, "a/b/obj", 5, 6); err == nil {
			t.Fatalf("a range past the end succeeded")
		}
		put(t, s, "a/b/obj", "new")
		if got, err := get(t, s, "a/b/obj", 0, -1); err != nil || got != "new" {
			t.Fatalf("after replacing: %q, %v", got, err)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		s := newStore(t)
		if _, err := get(t, s, "nothing", 0, -1); !errors.Is(err, checkpoint.ErrNotExist) {
			t.Fatalf("get of a missing object: %v, want ErrNotExist", err)
		}
		if err := s.Delete(ctx, "nothing"); err != nil {
			t.Fatalf("delete of a missing object: %v", err)
		}
	})
	t.Run("ListDelete", func(t *testing.T) {
		s := newStore(t)
		for i := range 5 {
			put(t, s, fmt.Sprintf("data/%02d", i), strings.Repeat("x", i))
		}
		put(t, s, "registry", "r")
		put(t, s, "dat", "d")
		list, err := s.List(ctx, "data/")
		if err != nil || len(list) != 5 {
			t.Fatalf("list data/: %v, %v", list, err)
		}
		for i, o := range list {
			if o.Name != fmt.Sprintf("data/%02d", i) || o.Size != int64(i) {
				t.Fatalf("list entry %d: %+v", i, o)
			}
		}
		all, err := s.List(ctx, "")
		if err != nil || len(all) != 7 {
			t.Fatalf("list all: %v, %v", all, err)
		}
		if err := s.Delete(ctx, "data/02"); err != nil {
			t.Fatal(err)
		}
		if _, err := get(t, s, "data/02", 0, -1); !errors.Is(err, checkpoint.ErrNotExist) {
			t.Fatalf("get after delete: %v", err)
		}
		list, _ = s.List(ctx, "data/")
		if len(list) != 4 {
			t.Fatalf("after delete: %v", list)
		}
	})
	t.Run("BadNames", func(t *testing.T) {
		s := newStore(t)
		for _, name := range []string{"", "/abs", "../up", "a/../b", "a/./b", ".hidden", "a//b", "a/", "sp ace", `back\slash`} {
			if err := s.Put(ctx, name, strings.NewReader("x"), 1); err == nil {
				t.Fatalf("put %q succeeded", name)
			}
			if _, err := s.Get(ctx, name, 0, -1); err == nil || errors.Is(err, checkpoint.ErrNotExist) {
				t.Fatalf("get %q: %v, want a refusal", name, err)
			}
			if err := s.Delete(ctx, name); err == nil {
				t.Fatalf("delete %q succeeded", name)
			}
		}
	})
	t.Run("FailedPutLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		put(t, s, "kept", "old")
		boom := errors.New("reader failed")
		for _, name := range []string{"kept", "fresh"} {
			r := io.MultiReader(strings.NewReader("partial"), errReader{boom})
			if err := s.Put(ctx, name, r, 100); err == nil {
				t.Fatalf("put %s from a failing reader succeeded", name)
			}
			// A short reader fails too.
			if err := s.Put(ctx, name, bytes.NewReader([]byte("abc")), 4); err == nil {
				t.Fatalf("put %s of fewer bytes than announced succeeded", name)
			}
		}
		if got, err := get(t, s, "kept", 0, -1); err != nil || got != "old" {
			t.Fatalf("kept after failed puts: %q, %v", got, err)
		}
		if _, err := get(t, s, "fresh", 0, -1); !errors.Is(err, checkpoint.ErrNotExist) {
			t.Fatalf("fresh after failed puts: %v", err)
		}
		list, err := s.List(ctx, "")
		if err != nil || len(list) != 1 {
			t.Fatalf("objects after failed puts: %v, %v", list, err)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
