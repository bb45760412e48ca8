// Package storetest checks that a checkpoint.Store behaves as the
// interface says: the same tests run against the local store and any
// other implementation (the S3 store runs them against a real server,
// which StartS3Server starts).
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
	t.Run("Compose", func(t *testing.T) {
		s, ok := newStore(t).(checkpoint.Composer)
		if !ok {
			t.Skip("the store is not a Composer")
		}
		// Sources above and below S3's 5 MiB minimum part size, so that a
		// store with server-side copies copies some parts and sends others.
		pattern := func(n int, seed byte) string {
			b := make([]byte, n)
			for i := range b {
				b[i] = seed + byte(i*7+i/4096)
			}
			return string(b)
		}
		const mib = 1 << 20
		a, b, c := pattern(6*mib+100, 1), pattern(7*mib, 2), pattern(1000, 3)
		put(t, s, "src/a", a)
		put(t, s, "src/b", b)
		put(t, s, "src/c", c)
		parts := []checkpoint.Part{
			{Object: "src/a", Offset: 0, Length: 6 * mib},
			{Object: "src/b", Offset: mib, Length: 6 * mib},
			{R: strings.NewReader("sent"), Length: 4},
			{Object: "src/c", Offset: 10, Length: 20},
			{Object: "src/b", Offset: 0, Length: 6 * mib}, // after a small part
			{Object: "src/a", Offset: 6 * mib, Length: 100},
		}
		want := a[:6*mib] + b[mib:7*mib] + "sent" + c[10:30] + b[:6*mib] + a[6*mib:]
		copied, err := s.Compose(ctx, "out/1", parts)
		if err != nil {
			t.Fatalf("compose: %v", err)
		}
		if copied < 0 || copied > int64(len(want)-4) {
			t.Fatalf("compose reports %d bytes copied, of %d stored bytes", copied, len(want)-4)
		}
		if got, err := get(t, s, "out/1", 0, -1); err != nil || got != want {
			t.Fatalf("composed object: %d bytes, %v; want %d bytes (equal: %v)", len(got), err, len(want), got == want)
		}
		if _, err := s.Compose(ctx, "out/empty", nil); err != nil {
			t.Fatalf("compose of nothing: %v", err)
		}
		if got, err := get(t, s, "out/empty", 0, -1); err != nil || got != "" {
			t.Fatalf("composed empty object: %q, %v", got, err)
		}
		// Failures leave no object: a missing source, a range past a
		// source's end, a failing or short reader.
		boom := errors.New("reader failed")
		for name, bad := range map[string]checkpoint.Part{
			"missing":   {Object: "src/none", Length: 6 * mib},
			"past-end":  {Object: "src/a", Offset: mib, Length: 6 * mib},
			"small-end": {Object: "src/c", Offset: 990, Length: 20},
			"reader":    {R: io.MultiReader(strings.NewReader("x"), errReader{boom}), Length: 10},
			"short":     {R: strings.NewReader("x"), Length: 10},
		} {
			ps := []checkpoint.Part{{Object: "src/b", Length: 6 * mib}, bad, {Object: "src/a", Length: 6 * mib}}
			if _, err := s.Compose(ctx, "out/"+name, ps); err == nil {
				t.Fatalf("compose with a %s part succeeded", name)
			}
			if _, err := get(t, s, "out/"+name, 0, -1); !errors.Is(err, checkpoint.ErrNotExist) {
				t.Fatalf("after a failed compose with a %s part: %v, want ErrNotExist", name, err)
			}
		}
		if err := s.Delete(ctx, "src/a"); err != nil {
			t.Fatal(err)
		}
		// The composed object is an object of its own.
		if got, err := get(t, s, "out/1", 6*mib, 10); err != nil || got != b[mib:mib+10] {
			t.Fatalf("composed object after its source's deletion: %q, %v", got, err)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
