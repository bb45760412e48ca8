package compaction

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/rangedel"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// Config describes one flush or compaction.
type Config struct {
	// Input yields the point entries of all inputs merged in internal-key
	// order. Run does not close it.
	Input base.InternalIterator
	// RangeDels are the range tombstones of all inputs.
	RangeDels *rangedel.Set
	// Snapshots are the sequence numbers of open snapshots, ascending.
	Snapshots []base.SeqNum
	// Bottommost is true when no data older than the inputs lies below the
	// output's key range, so tombstones of stripe 0 can be dropped.
	Bottommost bool
	// NewFile creates an output file.
	NewFile func() (base.FileNum, vfs.File, error)
	// Writer configures the tables written.
	Writer sstable.WriterOptions
	// TargetFileSize is the size past which an output file is finished at the
	// next user-key boundary; 0 means one output file.
	TargetFileSize uint64
	// Grandparents are the files, in key order, of the level below the
	// output level. An output is finished before it overlaps more than
	// MaxGrandparentOverlap bytes of them, so compacting it later stays
	// bounded. Zero disables the rule.
	Grandparents          []*manifest.FileMetadata
	MaxGrandparentOverlap uint64
	// Filter, if set, may remove or rewrite entries (see Filter).
	Filter Filter
	// Merger, if set, folds merge operands (see entryFilter.foldMerge);
	// without it they are all kept. ReadValue reads the value a pointer
	// locates, for a merge onto a separated value.
	Merger    Merger
	ReadValue func(key, ptr []byte) ([]byte, error)
	// Now is the time, in milliseconds since the Unix epoch, against which
	// entries' expiry (base.EntryMeta) is judged: expired entries are
	// dropped, or become tombstones, without reading any value log. 0: no
	// entry is treated as expired.
	Now int64
	// Separate, if set (flushes), may move a SET entry's value out of the
	// tree: it returns the pointer to store instead, or ok=false to keep the
	// value inline.
	Separate func(key, value []byte) (p vlog.Pointer, ok bool, err error)
	// Relocate, if set (garbage collection), may move the value a pointer
	// entry locates into another value log: it returns the new pointer, or
	// ok=false to keep the entry as it is.
	Relocate func(key []byte, p vlog.Pointer) (np vlog.Pointer, ok bool, err error)
}

// Output is one table written by Run.
type Output struct {
	FileNum base.FileNum
	Meta    *sstable.WriterMetadata
	// VlogRefs is what the table's value pointers reference, per value log,
	// by file number (also stored in the table's vlog.RefsBlock).
	VlogRefs []manifest.VlogRef
	// Expiry summarizes the expiry times of the table's entries.
	Expiry manifest.TableExpiry
}

// Run writes the surviving entries of cfg.Input and cfg.RangeDels into new
// tables. On error, the outputs already finished are returned so the caller
// can remove them.
func Run(cfg Config) ([]Output, Stats, error) {
	var stats Stats
	r := runner{cfg: cfg, stats: &stats}
	r.frags = keepRangeDels(cfg.RangeDels, cfg.Snapshots, cfg.Bottommost, &stats)
	f := entryFilter{
		in:         cfg.Input,
		snaps:      cfg.Snapshots,
		rangeDels:  cfg.RangeDels,
		bottommost: cfg.Bottommost,
		stats:      &stats,
		filter:     cfg.Filter,
		now:        cfg.Now,
		merger:     cfg.Merger,
		readValue:  cfg.ReadValue,
	}
	err := r.run(&f)
	if err != nil {
		if r.w != nil {
			_ = r.w.Close() // closes the file; the caller removes it
			r.outputs = append(r.outputs, Output{FileNum: r.num})
		}
		return r.outputs, stats, err
	}
	return r.outputs, stats, nil
}

type runner struct {
	cfg     Config
	stats   *Stats
	frags   []rangedel.Fragment // tombstones still to be written, in key order
	w       *sstable.Writer
	num     base.FileNum
	outputs []Output
	lastKey []byte // last user key added to the current output

	gpIndex   int    // first grandparent not yet passed
	gpOverlap uint64 // bytes of grandparents the current output spans

	refs   vlog.RefCounter // value-log references of the current output
	ptrBuf []byte
	expiry manifest.TableExpiry // of the current output
}

// noteExpiry adds the expiry of an entry written to the current output.
func (r *runner) noteExpiry(kind base.Kind, value []byte) {
	if !kind.HasMeta() {
		return
	}
	m, _, err := base.DecodeEntryMeta(value)
	if err != nil || m.ExpiresAt == 0 {
		return
	}
	e := &r.expiry
	if e.Expiring == 0 || m.ExpiresAt < e.Earliest {
		e.Earliest = m.ExpiresAt
	}
	if m.ExpiresAt > e.Latest {
		e.Latest = m.ExpiresAt
	}
	e.Expiring++
}

// add writes one entry to the current output, separating its value and
// counting its value-log reference.
func (r *runner) add(k base.InternalKey, value []byte) error {
	kind := k.Kind()
	r.noteExpiry(kind, value)
	if r.cfg.Separate != nil && kind.IsSet() {
		meta, v, err := base.SplitEntry(kind, value)
		if err != nil {
			return fmt.Errorf("compaction: entry %s: %w", k, err)
		}
		p, ok, err := r.cfg.Separate(k.UserKey, v)
		if err != nil {
			return err
		}
		if ok {
			// The metadata (an expiry) stays in the tree with the pointer.
			r.refs.Add(p)
			r.stats.SeparatedBytes += uint64(p.Length)
			r.ptrBuf = r.ptrBuf[:0]
			if kind.HasMeta() {
				r.ptrBuf = meta.Append(r.ptrBuf)
			}
			r.ptrBuf = p.Encode(r.ptrBuf)
			pk := base.KindValuePointer
			if kind.HasMeta() {
				pk = base.KindValuePointerMeta
			}
			k.Trailer = base.MakeTrailer(k.SeqNum(), pk)
			return r.w.Add(k, r.ptrBuf)
		}
	}
	if kind.IsPointer() {
		meta, enc, err := base.SplitEntry(kind, value)
		if err != nil {
			return fmt.Errorf("compaction: entry %s: %w", k, err)
		}
		p, err := vlog.DecodePointer(enc)
		if err != nil {
			return fmt.Errorf("compaction: entry %s: bad value pointer: %w", k, err)
		}
		if r.cfg.Relocate != nil {
			np, ok, err := r.cfg.Relocate(k.UserKey, p)
			if err != nil {
				return err
			}
			if ok {
				r.stats.addVlog(&r.stats.VlogRelocated, p)
				r.stats.Relocated++
				p = np
				r.ptrBuf = r.ptrBuf[:0]
				if kind.HasMeta() {
					r.ptrBuf = meta.Append(r.ptrBuf)
				}
				r.ptrBuf = p.Encode(r.ptrBuf)
				value = r.ptrBuf
			}
		}
		r.refs.Add(p)
	}
	return r.w.Add(k, value)
}

// passGrandparents accounts for the grandparents that end before key, and
// reports whether the current output has come to overlap too many of them.
func (r *runner) passGrandparents(key []byte) bool {
	gps := r.cfg.Grandparents
	for r.gpIndex < len(gps) && base.Compare(gps[r.gpIndex].Largest.UserKey, key) < 0 {
		if r.w != nil {
			r.gpOverlap += gps[r.gpIndex].Size
		}
		r.gpIndex++
	}
	return r.cfg.MaxGrandparentOverlap > 0 && r.gpOverlap > r.cfg.MaxGrandparentOverlap
}

func (r *runner) run(f *entryFilter) error {
	ok, err := f.next(true)
	for ; ok; ok, err = f.next(false) {
		k := f.key
		if r.w == nil || !base.Equal(k.UserKey, r.lastKey) {
			// A new user key: outputs may be cut here.
			tooWide := r.passGrandparents(k.UserKey)
			full := r.w != nil && r.cfg.TargetFileSize > 0 && r.w.EstimatedSize() >= r.cfg.TargetFileSize
			if r.w != nil && (tooWide || full) {
				if err := r.finish(k.UserKey); err != nil {
					return err
				}
			}
		}
		if r.w == nil {
			if err := r.open(); err != nil {
				return err
			}
		}
		if err := r.add(k, f.value); err != nil {
			return err
		}
		r.stats.EntriesOut++
		r.lastKey = append(r.lastKey[:0], k.UserKey...)
	}
	if err != nil {
		return err
	}
	if r.w == nil && len(r.frags) > 0 {
		if err := r.open(); err != nil {
			return err
		}
	}
	if r.w != nil {
		return r.finish(nil)
	}
	return nil
}

func (r *runner) open() error {
	num, file, err := r.cfg.NewFile()
	if err != nil {
		return err
	}
	r.num = num
	r.w = sstable.NewWriter(file, r.cfg.Writer)
	return nil
}

// finish writes the tombstones that fall before splitKey (all of them when
// splitKey is nil), clipped to it, and closes the current output.
func (r *runner) finish(splitKey []byte) error {
	if splitKey != nil {
		// splitKey aliases the input iterator; the clipped fragment keeps it.
		splitKey = append([]byte(nil), splitKey...)
	}
	for len(r.frags) > 0 {
		frag := r.frags[0]
		if splitKey != nil && base.Compare(frag.Start, splitKey) >= 0 {
			break
		}
		end := frag.End
		if splitKey != nil && base.Compare(end, splitKey) > 0 {
			end = splitKey
			r.frags[0].Start = splitKey // the rest goes to the next output
		} else {
			r.frags = r.frags[1:]
		}
		for _, seq := range frag.Seqs {
			if err := r.w.AddRangeDel(frag.Start, end, seq); err != nil {
				return err
			}
		}
	}
	refs := r.refs.Take()
	if len(refs) > 0 {
		if err := r.w.AddMetaBlock(vlog.RefsBlock, vlog.EncodeRefs(refs)); err != nil {
			return err
		}
	}
	w := r.w
	r.w = nil
	r.gpOverlap = 0
	if err := w.Close(); err != nil {
		r.outputs = append(r.outputs, Output{FileNum: r.num})
		return err
	}
	meta := w.Metadata()
	if meta == nil {
		return errors.New("compaction: writer returned no metadata")
	}
	if !meta.HasPointKeys && !meta.HasRangeDels {
		return fmt.Errorf("compaction: output %s is empty", r.num)
	}
	r.stats.BytesOut += meta.Size
	expiry := r.expiry
	r.expiry = manifest.TableExpiry{}
	if expiry.Expiring > 0 {
		expiry.Entries = meta.Properties.NumEntries
	}
	r.outputs = append(r.outputs, Output{FileNum: r.num, Meta: meta, VlogRefs: refs, Expiry: expiry})
	return nil
}
