package vfs

import (
	"errors"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// workload uses every kind of operation once and stops at the first error.
func workload(fs FS) error {
	if err := fs.MkdirAll("db", 0o755); err != nil {
		return err
	}
	if err := fs.Mkdir("db/d", 0o755); err != nil {
		return err
	}
	x, err := fs.CreateExclusive("db/d/x")
	if err != nil {
		return err
	}
	if err := x.Close(); err != nil {
		return err
	}
	f, err := fs.Create("db/a")
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := fs.OpenDir("db")
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		return err
	}
	if err := d.Close(); err != nil {
		return err
	}
	if err := fs.Rename("db/a", "db/b"); err != nil {
		return err
	}
	if err := fs.Link("db/b", "db/c"); err != nil {
		return err
	}
	if _, err := fs.Stat("db/b"); err != nil {
		return err
	}
	if _, err := fs.List("db"); err != nil {
		return err
	}
	r, err := fs.Open("db/b")
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Read(make([]byte, 2)); err != nil {
		return err
	}
	if _, err := r.ReadAt(make([]byte, 2), 3); err != nil {
		return err
	}
	if _, err := r.Stat(); err != nil {
		return err
	}
	if err := fs.Remove("db/c"); err != nil {
		return err
	}
	return fs.RemoveAll("db")
}

var workloadOps = []Op{
	{Kind: OpMkdirAll, Path: "db"},
	{Kind: OpMkdir, Path: "db/d"},
	{Kind: OpCreateExclusive, Path: "db/d/x"},
	{Kind: OpCreate, Path: "db/a"},
	{Kind: OpWrite, Path: "db/a"},
	{Kind: OpSync, Path: "db/a"},
	{Kind: OpOpenDir, Path: "db"},
	{Kind: OpSyncDir, Path: "db"},
	{Kind: OpRename, Path: "db/a", NewPath: "db/b"},
	{Kind: OpLink, Path: "db/b", NewPath: "db/c"},
	{Kind: OpStat, Path: "db/b"},
	{Kind: OpList, Path: "db"},
	{Kind: OpOpen, Path: "db/b"},
	{Kind: OpRead, Path: "db/b"},
	{Kind: OpReadAt, Path: "db/b"},
	{Kind: OpFileStat, Path: "db/b"},
	{Kind: OpRemove, Path: "db/c"},
	{Kind: OpRemoveAll, Path: "db"},
}

func TestErrorFSSeesEveryOperation(t *testing.T) {
	var mu sync.Mutex
	var seen []Op
	rec := InjectorFunc(func(op Op) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, op)
		return nil
	})
	require.NoError(t, workload(NewErrorFS(NewMem(), rec)))
	require.Equal(t, workloadOps, seen, "Close is never shown to the injector")

	kinds := map[OpKind]bool{}
	for _, op := range seen {
		kinds[op.Kind] = true
	}
	require.Len(t, kinds, int(numOpKinds), "the workload covers every kind")
}

func TestIndexInjectorFailsEachIndex(t *testing.T) {
	counter := OnIndex(-1)
	require.NoError(t, workload(NewErrorFS(NewMem(), counter)))
	require.Equal(t, int64(len(workloadOps)), counter.Count())
	require.Zero(t, counter.Injected())

	for i := range counter.Count() {
		inj := OnIndex(i)
		err := workload(NewErrorFS(NewMem(), inj))
		require.ErrorIs(t, err, ErrInjected, "index %d", i)
		require.Contains(t, err.Error(), workloadOps[i].String())
		require.False(t, errors.Is(err, os.ErrNotExist))
		require.Equal(t, int64(1), inj.Injected())
		require.Equal(t, i+1, inj.Count(), "the workload stops at the failure")
	}
}

func TestIndexInjectorWritesOnly(t *testing.T) {
	var writes []Op
	for _, op := range workloadOps {
		if op.Kind.IsWrite() {
			writes = append(writes, op)
		}
	}
	require.Len(t, writes, 11)

	counter := OnIndex(-1, WritesOnly())
	require.NoError(t, workload(NewErrorFS(NewMem(), counter)))
	require.Equal(t, int64(len(writes)), counter.Count())
	for i := range counter.Count() {
		err := workload(NewErrorFS(NewMem(), OnIndex(i, WritesOnly())))
		require.ErrorIs(t, err, ErrInjected)
		require.Contains(t, err.Error(), writes[i].String())
	}
}

func TestIndexInjectorSticky(t *testing.T) {
	fs := NewErrorFS(NewMem(), OnIndexSticky(3))
	for i := range 10 {
		_, err := fs.Stat("")
		if i < 3 {
			require.NoError(t, err, "op %d", i)
		} else {
			require.ErrorIs(t, err, ErrInjected, "op %d", i)
		}
	}
	never := OnIndexSticky(-1)
	fs = NewErrorFS(NewMem(), never)
	for range 5 {
		_, err := fs.Stat("")
		require.NoError(t, err)
	}
	require.Equal(t, int64(5), never.Count())
}

func TestIndexInjectorConcurrent(t *testing.T) {
	inj := OnIndex(57)
	fs := NewErrorFS(NewMem(), inj)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := fs.Stat(""); err != nil {
					if !errors.Is(err, ErrInjected) {
						t.Error(err)
					}
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, failures)
	require.Equal(t, int64(160), inj.Count())
	require.Equal(t, int64(1), inj.Injected())
}

func TestErrorFSFailedOperationsDoNothing(t *testing.T) {
	mem := NewMem()
	fail := false
	fs := NewErrorFS(mem, InjectorFunc(func(op Op) error {
		if fail {
			return ErrInjected
		}
		return nil
	}))
	f, err := fs.Create("f")
	require.NoError(t, err)
	write(t, f, "abc")

	fail = true
	n, err := f.Write([]byte("def"))
	require.ErrorIs(t, err, ErrInjected)
	require.Zero(t, n)
	_, err = fs.Create("g")
	require.ErrorIs(t, err, ErrInjected)
	_, err = fs.CreateExclusive("g")
	require.ErrorIs(t, err, ErrInjected)
	require.ErrorIs(t, fs.Mkdir("d", 0o755), ErrInjected)
	require.ErrorIs(t, fs.Rename("f", "h"), ErrInjected)
	require.ErrorIs(t, fs.Remove("f"), ErrInjected)
	n, err = f.ReadAt(make([]byte, 3), 0)
	require.ErrorIs(t, err, ErrInjected)
	require.Zero(t, n)
	require.NoError(t, f.Close(), "Close is never failed")

	fail = false
	require.Equal(t, []string{"f"}, listSorted(t, fs, ""))
	require.Equal(t, "abc", readFile(t, mem, "f"))
	require.Same(t, mem, fs.Unwrap())
}

func TestErrorFSFailedWriteKeepsOffset(t *testing.T) {
	inj := OnIndex(1) // 0: Create, 1: the first Write
	fs := NewErrorFS(NewMem(), inj)
	f, err := fs.Create("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("lost"))
	require.ErrorIs(t, err, ErrInjected)
	write(t, f, "kept")
	require.NoError(t, f.Close())
	require.Equal(t, "kept", readFile(t, fs, "f"))
}

func TestErrorFSEnabled(t *testing.T) {
	inj := OnIndex(0)
	fs := NewErrorFS(NewMem(), inj)
	require.True(t, fs.Enabled())
	fs.SetEnabled(false)
	require.False(t, fs.Enabled())
	for range 3 {
		_, err := fs.Stat("")
		require.NoError(t, err)
	}
	require.Zero(t, inj.Count(), "no counting while disabled")
	fs.SetEnabled(true)
	_, err := fs.Stat("")
	require.ErrorIs(t, err, ErrInjected)
	_, err = fs.Stat("")
	require.NoError(t, err)
	require.Equal(t, int64(2), inj.Count())
}

func TestErrorFSPassesThroughErrors(t *testing.T) {
	fs := NewErrorFS(NewMem(), nil)
	_, err := fs.Open("missing")
	requirePathError(t, err, os.ErrNotExist)
	f, err := fs.Create("f")
	require.NoError(t, err)
	_, err = f.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, "a/b", fs.PathJoin("a", "b"))
	require.Equal(t, "b", fs.PathBase("a/b"))
	require.Equal(t, "a", fs.PathDir("a/b"))
}

func TestOpStrings(t *testing.T) {
	require.Equal(t, "create(db/000001.log)", Op{Kind: OpCreate, Path: "db/000001.log"}.String())
	require.Equal(t, "rename(a, b)", Op{Kind: OpRename, Path: "a", NewPath: "b"}.String())
	require.Equal(t, "op(99)", OpKind(99).String())
	require.Equal(t, "op(-1)", OpKind(-1).String())
	for k := range numOpKinds {
		require.NotEmpty(t, opKindNames[k], "kind %d has a name", k)
	}
	require.Equal(t, "mkdir(a)", Op{Kind: OpMkdir, Path: "a"}.String())
	require.Equal(t, "create-exclusive(a)", Op{Kind: OpCreateExclusive, Path: "a"}.String())
	require.True(t, OpSyncDir.IsWrite())
	require.True(t, OpMkdir.IsWrite())
	require.True(t, OpCreateExclusive.IsWrite())
	require.False(t, OpOpenDir.IsWrite())
	require.False(t, OpReadAt.IsWrite())
}

func TestZeroValues(t *testing.T) {
	var mem MemFS
	writeFile(t, &mem, "f", "x")
	require.Equal(t, []string{"f"}, listSorted(t, &mem, ""))
	require.Contains(t, mem.String(), "f: 1 bytes")

	var efs ErrorFS
	_, err := efs.Create("f")
	require.Error(t, err)
	require.Error(t, efs.MkdirAll("d", 0o755))
	require.Error(t, efs.Mkdir("d", 0o755))
	_, err = efs.CreateExclusive("f")
	require.Error(t, err)
	require.Equal(t, "a/b", efs.PathJoin("a", "b"))
	require.Equal(t, "b", efs.PathBase("a/b"))
	require.Equal(t, "a", efs.PathDir("a/b"))
}
