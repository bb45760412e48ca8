package vfs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestMapFile(t *testing.T) {
	data := []byte("mapped bytes of an immutable file")
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok, err := MapFile(f, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1" {
			t.Fatalf("no mapping of an OS file on %s", runtime.GOOS)
		}
		return
	}
	if string(m) != string(data) {
		t.Fatalf("mapping holds %q, want %q", m, data)
	}
	if err := Unmap(m); err != nil {
		t.Fatal(err)
	}

	// Files that are not the OS's, or that a wrapper intercepts, are not
	// mapped; neither is an empty range.
	mem := NewMem()
	mf, err := mem.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := MapFile(mf, 1); ok || err != nil {
		t.Fatalf("MemFS file mapped (ok %v, err %v)", ok, err)
	}
	ef, err := NewErrorFS(Default, nil).Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if _, ok, err := MapFile(ef, int64(len(data))); ok || err != nil {
		t.Fatalf("ErrorFS file mapped (ok %v, err %v)", ok, err)
	}
	if _, ok, _ := MapFile(f, 0); ok {
		t.Fatal("empty range mapped")
	}
}

func TestMappedFaultIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 4*os.Getpagesize()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok, err := MapFile(f, int64(4*os.Getpagesize()))
	if err != nil || !ok {
		t.Skipf("no mapping (ok %v, err %v)", ok, err)
	}
	defer Unmap(m)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	read := func() (b byte, err error) {
		old := BeginMapped()
		defer EndMapped(old, &err)
		return m[len(m)-1], nil
	}
	if _, err := read(); err != ErrMappedFault {
		t.Fatalf("read past the end of a truncated file: %v, want ErrMappedFault", err)
	}
}
