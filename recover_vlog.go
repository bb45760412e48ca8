package strata

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vlog"
)

// Recovery of values written at commit. A WAL record may point into a value
// log the manifest does not list: the active value log of the run that
// crashed (unfinished, its tail possibly torn), or one it finished but
// whose manifest edit did not reach the disk. Such a value log is adopted:
// read once, its valid records found, and added to the version in the
// recovery edit. A pointer to a record that did not survive is a torn
// write: the WAL could not have been synced after it (a Sync write syncs
// the value log first), so nothing acknowledged as synced follows, and the
// replay ends at that batch.

// adoptedVlog is a value log adopted by recovery.
type adoptedVlog struct {
	meta *manifest.VlogMetadata // nil when the file is missing or unreadable
	// finished: the file has its footer, every record is valid. Otherwise
	// records maps the offset of each valid record to its length.
	finished bool
	records  map[uint64]uint32
}

// pointersValid reports whether every pointer of the batch rec (from WAL
// name at offset) locates a record that survived.
func (r *walReplay) pointersValid(rec []byte, name string, offset int64) (bool, error) {
	br, err := newBatchReader(rec)
	if err != nil {
		return false, base.CorruptionErrorf(name, offset, "%v", err)
	}
	var v *manifest.Version
	for {
		kind, _, value, ok, err := br.next()
		if err != nil {
			return false, base.CorruptionErrorf(name, offset, "%v", err)
		}
		if !ok {
			return true, nil
		}
		if !kind.IsPointer() {
			continue
		}
		_, enc, err := base.SplitEntry(kind, value)
		if err != nil {
			return false, base.CorruptionErrorf(name, offset, "batch entry: %v", err)
		}
		p, err := vlog.DecodePointer(enc)
		if err != nil {
			return false, base.CorruptionErrorf(name, offset, "batch entry: %v", err)
		}
		if v == nil {
			r.d.mu.Lock()
			v = r.d.vs.Current()
			r.d.mu.Unlock()
		}
		if v.Vlogs[p.FileNum] != nil {
			continue
		}
		a, err := r.adopt(p.FileNum)
		if err != nil {
			return false, err
		}
		if a.meta == nil {
			return false, nil
		}
		if a.finished {
			if p.End() > vlog.RecordBytes(a.meta.Size)+vlog.HeaderLen {
				return false, nil
			}
			continue
		}
		if n, ok := a.records[p.Offset]; !ok || n != p.Length {
			return false, nil
		}
	}
}

// adopt reads value log num, once, to learn which of its records survived.
func (r *walReplay) adopt(num base.FileNum) (*adoptedVlog, error) {
	if a := r.adopted[num]; a != nil {
		return a, nil
	}
	if r.adopted == nil {
		r.adopted = make(map[base.FileNum]*adoptedVlog)
	}
	a := &adoptedVlog{}
	r.adopted[num] = a
	d := r.d
	name := d.path(base.FileTypeVlog, num)
	st, err := d.fs.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		d.opts.Logger.Warn("strata: recovery found WAL pointers into a value log that does not exist",
			"file", base.MakeFilename(base.FileTypeVlog, num))
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := d.fs.Open(name)
	if err != nil {
		return nil, err
	}
	rd, err := vlog.NewReader(f, num, st.Size(), vlog.ReaderOptions{})
	if err != nil {
		f.Close()
		if errors.Is(err, base.ErrCorruption) {
			// Not even a header: nothing in it survived.
			return a, nil
		}
		return nil, err
	}
	defer rd.Close()
	meta := &manifest.VlogMetadata{FileNum: num, Size: uint64(st.Size())}
	a.finished = rd.Finished()
	// Count and list the records that verify; a scan stops at the first
	// that does not, the torn tail.
	a.records = make(map[uint64]uint32)
	sc := rd.NewScanner()
	for sc.Next() {
		p := sc.Pointer()
		meta.Records++
		meta.ValueBytes += uint64(p.ValueLen)
		a.records[p.Offset] = p.Length
	}
	if err := sc.Err(); err != nil {
		// A scan ends a torn tail without an error; its error is a read
		// that failed (which must fail the recovery, not pass for a torn
		// tail: the replay would stop there and drop every write after
		// it, synced ones too), or a record of a finished file that does
		// not verify.
		if !a.finished || !errors.Is(err, base.ErrCorruption) {
			return nil, err
		}
		// A footer, and a record before it that does not verify: the
		// crash came while Finish synced the file, and the footer reached
		// the disk while an earlier page did not (a filesystem may write
		// a file's pages in any order). Nothing synced points past the
		// bad record (a Sync write syncs the value log first), so the
		// file is an unfinished one, cut where its valid records end.
		d.opts.Logger.Warn("strata: recovery found a value log whose footer outlived a record before it; adopted as unfinished",
			"file", base.MakeFilename(base.FileTypeVlog, num), "records end", sc.Offset(), "error", err.Error())
		if !d.opts.ReadOnly {
			if err := d.cutValueLog(name, sc.Offset()); err != nil {
				return nil, err
			}
			meta.Size = sc.Offset()
		}
		a.finished = false
	}
	if a.finished {
		a.records = nil
	} else {
		// Without a footer the file's records end where the scan
		// stopped: the ledger counts them exactly (a torn tail after
		// them is neither live nor garbage records).
		meta.RecordsEnd = sc.Offset()
	}
	a.meta = meta
	d.opts.Logger.Info("strata: recovery adopted a value log the manifest did not list yet",
		"file", base.MakeFilename(base.FileTypeVlog, num), "bytes", meta.Size, "records", meta.Records, "finished", a.finished)
	return a, nil
}

// cutValueLog replaces the value log at name by its first n bytes, its
// valid records: the copy is written and synced under a temporary name,
// then renamed over the file and the directory synced. A crash in between
// leaves the file as it was (and a temporary file that Open removes), and
// recovery cuts it again.
func (d *DB) cutValueLog(name string, n uint64) error {
	src, err := d.fs.Open(name)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := d.path(base.FileTypeTemp, d.vs.NewFileNum())
	dst, err := d.fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.NewSectionReader(src, 0, int64(n)))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fs.Rename(tmp, name)
	}
	if err == nil {
		err = manifest.SyncDir(d.fs, d.dirname)
	}
	if err != nil {
		d.fs.Remove(tmp)
		return fmt.Errorf("strata: recovery: cut value log %s: %w", name, err)
	}
	return nil
}

// adoptedMetadata returns the adopted value logs for the recovery edit.
func (r *walReplay) adoptedMetadata() []*manifest.VlogMetadata {
	var out []*manifest.VlogMetadata
	for _, a := range r.adopted {
		if a.meta != nil {
			out = append(out, a.meta)
		}
	}
	return out
}

// readValue reads the value a replayed pointer locates, for a flush during
// the replay that folds merge operands onto it. The value log may be one
// this recovery adopted, which versions hold only from the recovery edit
// on; pointersValid has checked the record.
func (r *walReplay) readValue(key, ptr []byte) ([]byte, error) {
	if p, err := vlog.DecodePointer(ptr); err == nil {
		if a := r.adopted[p.FileNum]; a != nil && a.meta != nil {
			return r.d.vlogs.Value(a.meta, p, key, nil)
		}
	}
	return r.d.valueReader(nil)(key, ptr)
}
