package strata

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// The on-disk format promise (README, "Stability"): a file records its
// format version; a version newer than this build reads is refused with
// ErrNewerFormat, and older versions are read. These tests craft the files
// a newer build would leave and open them.

// formatTestDB writes a database in dir on fs with tables, separated values
// and a WAL, and closes it.
func formatTestDB(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	db, err := Open(dir, &Options{FS: fs, ValueThreshold: 64})
	require.NoError(t, err)
	for i := range 20 {
		require.NoError(t, db.Set([]byte{'k', byte('a' + i)}, []byte(strings.Repeat("v", 100+i)), NoSync))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Set([]byte("unflushed"), []byte("in the WAL"), Sync))
	require.NoError(t, db.Close())
}

// fileBytes returns the contents of every file of dir.
func fileBytes(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range names {
		f, err := fs.Open(fs.PathJoin(dir, n))
		require.NoError(t, err)
		b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		out[n] = string(b)
	}
	return out
}

// rewriteFile replaces the contents of name on fs by what edit makes of
// them.
func rewriteFile(t *testing.T, fs vfs.FS, name string, edit func([]byte) []byte) {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<40))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b = edit(b)
	w, err := fs.Create(name)
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
}

// formatFiles lists the paths of db's files of type typ.
func formatFiles(t *testing.T, fs vfs.FS, typ base.FileType) []string {
	t.Helper()
	names := filesOfTypeIn(t, fs, "db", typ)
	require.NotEmpty(t, names, "no files of type %v", typ)
	for i, n := range names {
		names[i] = fs.PathJoin("db", n)
	}
	return names
}

// requireNewerFormat checks err is the refusal of a newer format: it
// matches ErrNewerFormat, not ErrCorruption, and says a newer Strata wrote
// the file.
func requireNewerFormat(t *testing.T, err error, what string) {
	t.Helper()
	require.True(t, errors.Is(err, ErrNewerFormat), "%s: %v", what, err)
	require.False(t, errors.Is(err, ErrCorruption), "%s: %v", what, err)
	require.Contains(t, err.Error(), "written by a newer Strata", what)
}

// TestFormatVersionNewerManifest: a database whose manifest records a newer
// format version is refused by Open, writable or read-only, without a byte
// of it changed.
func TestFormatVersionNewerManifest(t *testing.T) {
	fs := vfs.NewMem()
	formatTestDB(t, fs, "db")
	name := formatFiles(t, fs, base.FileTypeManifest)[0]
	rewriteFile(t, fs, name, func([]byte) []byte {
		// The manifest a newer build would write: its snapshot record
		// says so, then holds what this build cannot decode.
		ve := &manifest.VersionEdit{FormatVersion: manifest.FormatVersion + 1, ComparerName: manifest.ComparerName}
		ve.SetNextFileNum(100)
		mem := vfs.NewMem()
		f, err := mem.Create("m")
		require.NoError(t, err)
		w := record.NewWriter(f)
		_, err = w.WriteRecord(append(ve.Encode(nil), 60, 1, 'x'))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return []byte(fileBytes(t, mem, "")["m"])
	})
	before := fileBytes(t, fs, "db")
	_, err := Open("db", &Options{FS: fs})
	requireNewerFormat(t, err, "Open")
	_, err = Open("db", &Options{FS: fs, ReadOnly: true})
	requireNewerFormat(t, err, "read-only Open")
	after := fileBytes(t, fs, "db")
	delete(after, "LOCK")
	delete(before, "LOCK")
	require.Equal(t, before, after, "a refused Open changed the directory")
}

// A table of a newer version: TestOpenRefusesNewerTableFormat.

// TestFormatVersionNewerValueLog: a value log whose header records a newer
// version fails the reads that reach it.
func TestFormatVersionNewerValueLog(t *testing.T) {
	fs := vfs.NewMem()
	formatTestDB(t, fs, "db")
	for _, name := range formatFiles(t, fs, base.FileTypeVlog) {
		rewriteFile(t, fs, name, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[8:], 2) // version 2, after the 8-byte magic
			binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(b[:24], crc32.MakeTable(crc32.Castagnoli)))
			return b
		})
	}
	db, err := Open("db", &Options{FS: fs, ReadOnly: true})
	if err == nil {
		_, err = db.Get([]byte("ka"))
		db.Close()
	}
	requireNewerFormat(t, err, "Get of a separated value")
}

// TestFormatVersionNewerExternalTable: Ingest refuses an external table of
// a newer layout version than TableWriter writes, leaving the file and the
// DB as they were.
func TestFormatVersionNewerExternalTable(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("db", &Options{FS: fs})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, fs.MkdirAll("ext", 0o755))
	f, err := fs.Create("ext/t.sst")
	require.NoError(t, err)
	w := sstable.NewWriter(f, sstable.WriterOptions{})
	w.SetUserProperty(externalProp, strconv.Itoa(externalVersionNum+1))
	require.NoError(t, w.Add(base.MakeInternalKey([]byte("k"), 0, base.KindSet), []byte("v")))
	require.NoError(t, w.Close())
	requireNewerFormat(t, db.Ingest([]string{"ext/t.sst"}), "Ingest")
	_, err = fs.Stat("ext/t.sst")
	require.NoError(t, err, "a refused ingest keeps the file")
	_, err = db.Get([]byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
}
