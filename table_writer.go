package strata

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// externalProp is the user property that marks a table written by a
// TableWriter: DB.Ingest accepts only such tables.
const externalProp = "strata.external"

// externalVersion is the value of externalProp: the layout of an external
// table. Its entries have sequence numbers 0, and pointers into an
// unnumbered value log named by ValueLogPath; a value may carry an expiry
// (kinds SETM and VPTRM, base.EntryMeta), and may have merge operands above
// it, the newest with sequence number n, the oldest 1, which Ingest stacks
// in that order above the value (written by exportRange, for a value that
// expires below operands that outlive it).
const externalVersion = "1"

// externalVersionNum is externalVersion as a number: Ingest refuses a
// table of a larger one as written by a newer Strata (ErrNewerFormat).
const externalVersionNum = 1

// TableWriterOptions configure a TableWriter. The zero value is valid.
type TableWriterOptions struct {
	// FS is the filesystem the files are written to; default vfs.Default.
	// DB.Ingest reads them through the DB's filesystem, so the two must be
	// the same.
	FS vfs.FS
	// ValueThreshold: values of at least this many bytes go to the table's
	// value log (ValueLogPath), as Options.ValueThreshold decides for a
	// DB; 0 means DefaultValueThreshold, a negative value keeps every
	// value in the table.
	ValueThreshold int
}

// TableWriter writes a table outside any database, for DB.Ingest: bulk
// loads and the restore of a key range into a running DB. Keys must be
// added in strictly increasing order; each is a value (Set) or a point
// tombstone (Delete) that, once ingested, hides older versions of the key.
// Large values go to a value log beside the table, at ValueLogPath(path),
// written only if a value is separated.
//
// Close finishes and syncs both files; until then (or after an error) the
// files are incomplete, and Abort removes them. A TableWriter is not safe
// for concurrent use.
type TableWriter struct {
	fs       vfs.FS
	path     string
	policy   vlog.Policy
	f        vfs.File
	w        *sstable.Writer
	vf       vfs.File
	vw       *vlog.Writer
	last     []byte
	count    int
	buf      []byte // an entry's value as it is built
	err      error
	finished bool
}

// ValueLogPath is the path of the value log that goes with the external
// table at path.
func ValueLogPath(path string) string { return path + ".vlog" }

// NewTableWriter creates the table at path, which must not exist.
func NewTableWriter(path string, o *TableWriterOptions) (*TableWriter, error) {
	var opts TableWriterOptions
	if o != nil {
		opts = *o
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	threshold := opts.ValueThreshold
	if threshold == 0 {
		threshold = DefaultValueThreshold
	}
	f, err := opts.FS.CreateExclusive(path)
	if err != nil {
		return nil, fmt.Errorf("strata: table writer: %w", err)
	}
	w := &TableWriter{fs: opts.FS, path: path, policy: vlog.Threshold(threshold), f: f}
	w.w = sstable.NewWriter(f, sstable.WriterOptions{})
	w.w.SetUserProperty(externalProp, externalVersion)
	return w, nil
}

// Set adds key with value. key must sort after every key added before.
// A key or value above MaxKeySize or MaxValueSize is refused with an error
// matching ErrTooLarge (the writer can go on).
func (w *TableWriter) Set(key, value []byte) error { return w.setEntry(key, value, 0, nil) }

// setEntry adds key with value, which expires at expiresAt (milliseconds
// since the Unix epoch; 0: never), and operands above it (oldest first),
// each an entry of its own. key must sort after every key added before.
func (w *TableWriter) setEntry(key, value []byte, expiresAt int64, operands [][]byte) error {
	if err := w.check(key); err != nil {
		return err
	}
	if err := checkValueSize("value", len(value)); err != nil {
		return err
	}
	for _, op := range operands {
		if err := checkValueSize("merge operand", len(op)); err != nil {
			return err
		}
	}
	for j := len(operands) - 1; j >= 0; j-- {
		if err := w.add(base.MakeInternalKey(key, base.SeqNum(j+1), base.KindMerge), operands[j]); err != nil {
			return err
		}
	}
	// The entry's value: the metadata, if any, then the value or pointer.
	kind, entry, meta := base.KindSet, value, w.buf[:0]
	if expiresAt != 0 {
		meta = base.EntryMeta{ExpiresAt: expiresAt}.Append(meta)
	}
	if w.policy.Separate(key, len(value)) {
		if w.vw == nil {
			vf, err := w.fs.CreateExclusive(ValueLogPath(w.path))
			if err != nil {
				return w.fail(fmt.Errorf("strata: table writer: %w", err))
			}
			w.vf, w.vw = vf, vlog.NewWriter(vf, vlog.Unnumbered)
		}
		p, err := w.vw.Add(key, value)
		if err != nil {
			return w.fail(fmt.Errorf("strata: table writer: %w", err))
		}
		w.buf = p.Encode(meta)
		kind, entry = base.KindValuePointer, w.buf
	} else if expiresAt != 0 {
		w.buf = append(meta, value...)
		entry = w.buf
	}
	if expiresAt != 0 {
		kind = kind.WithMeta()
	}
	return w.add(base.MakeInternalKey(key, 0, kind), entry)
}

// Delete adds a tombstone for key. key must sort after every key added
// before.
func (w *TableWriter) Delete(key []byte) error {
	if err := w.check(key); err != nil {
		return err
	}
	return w.add(base.MakeInternalKey(key, 0, base.KindDelete), nil)
}

// Count returns the number of keys added.
func (w *TableWriter) Count() int { return w.count }

func (w *TableWriter) check(key []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.finished {
		return errors.New("strata: table writer: closed")
	}
	if err := checkKeySize("key", len(key)); err != nil {
		return err
	}
	if w.count > 0 && base.Compare(key, w.last) <= 0 {
		return fmt.Errorf("strata: table writer: key %q does not sort after the previous key %q", key, w.last)
	}
	return nil
}

// add adds one entry; a key's last (of sequence number 0) counts it.
func (w *TableWriter) add(k base.InternalKey, value []byte) error {
	if err := w.w.Add(k, value); err != nil {
		return w.fail(fmt.Errorf("strata: table writer: %w", err))
	}
	if k.SeqNum() == 0 {
		w.last = append(w.last[:0], k.UserKey...)
		w.count++
	}
	return nil
}

func (w *TableWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Close finishes the table and its value log and syncs them. On an error
// the files are removed.
func (w *TableWriter) Close() error {
	if w.finished {
		return w.err
	}
	if w.err != nil {
		w.Abort()
		return w.err
	}
	w.finished = true
	var err error
	if w.vw != nil {
		err = w.vw.Finish()
	}
	if err == nil {
		err = w.w.Close() // syncs and closes the table
	} else {
		_ = w.f.Close()
	}
	if err == nil {
		err = manifest.SyncDir(w.fs, w.fs.PathDir(w.path))
	}
	if err != nil {
		w.err = fmt.Errorf("strata: table writer: %w", err)
		w.remove()
		return w.err
	}
	return nil
}

// Abort stops writing and removes the files. It does nothing after a
// successful Close.
func (w *TableWriter) Abort() {
	if w.finished && w.err == nil {
		return
	}
	if !w.finished {
		w.finished = true
		if w.vw != nil {
			_ = w.vw.Abort()
		}
		_ = w.f.Close()
	}
	if w.err == nil {
		w.err = errors.New("strata: table writer: aborted")
	}
	w.remove()
}

func (w *TableWriter) remove() {
	_ = w.fs.Remove(w.path)
	if w.vw != nil {
		_ = w.fs.Remove(ValueLogPath(w.path))
	}
}
