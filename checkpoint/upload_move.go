package checkpoint

// This file owns the moves of an upload: which segments it empties
// (segmentsToEmpty: those retained checkpoints use too little of, and
// small value-log segments it merges), what it therefore writes besides
// the new files (planWrites: every live piece of those segments, read from
// the database's files or copied from the store), and how an object of
// moved pieces is made in a store that copies its own bytes
// (composeObject). write puts the moved pieces with the new files
// (upload_pack.go); record points the registry at their new places
// (upload_register.go); the emptied segments, named by the old registry
// until the commit, are deleted by the sweep after it.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/bits"
	"slices"
)

// chooseWrites decides what the upload writes: the files the store does
// not hold, and every live piece of the segments it empties.
func (up *upload) chooseWrites() {
	emptied := segmentsToEmpty(up.next, up.files, &up.u.opts)
	up.writes = planWrites(up.next, up.files, emptied)
}

// segmentsToEmpty returns the segments of r an upload of files (matched
// against r: see matchStored) empties: those whose live share (bytes of
// pieces some retained checkpoint uses, over the segment's size) fell
// below MinLiveRatio, the sparsest first, up to ReuploadBytes of live
// pieces per upload (at least one segment); and small segments merged
// (see smallSegmentsToMerge). Every live piece of such a segment moves to
// a new object, and every retained checkpoint that uses it is pointed at
// the new place, so the old segment is deleted by this very upload:
// nothing is stored twice.
func segmentsToEmpty(r *registry, files []*localFile, opts *UploadOptions) map[string]bool {
	emptied := sparseSegments(r, files, opts)
	smallSegmentsToMerge(r, files, opts, emptied)
	return emptied
}

// sparseSegments returns the segments below MinLiveRatio that an upload
// of files empties (see segmentsToEmpty).
func sparseSegments(r *registry, files []*localFile, opts *UploadOptions) map[string]bool {
	type sparseSeg struct {
		name string
		live int64
	}
	used := map[string]bool{} // objects the new checkpoint uses
	for _, f := range files {
		if f.stored {
			used[f.ref.Object] = true
		}
	}
	var cands []sparseSeg
	for name, o := range r.Objects {
		// A segment of expiring pieces dies whole with the checkpoints
		// that use it: moving it would only move bytes about to die. (The
		// new checkpoint uses one only if a file was stored twice, by an
		// earlier policy that re-uploaded without moving: then it does
		// not die, and is emptied as any other.)
		if !o.Segment || o.Size == 0 || (o.Group == groupExpiring && !used[name]) {
			continue
		}
		if live := o.liveBytes(); live > 0 && float64(live)/float64(o.Size) < opts.MinLiveRatio {
			cands = append(cands, sparseSeg{name, live})
		}
	}
	slices.SortFunc(cands, func(a, b sparseSeg) int {
		ra := float64(a.live) / float64(r.Objects[a.name].Size)
		rb := float64(b.live) / float64(r.Objects[b.name].Size)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a.name, b.name))
	})
	sparse := map[string]bool{}
	var moving int64
	for _, c := range cands {
		if moving > 0 && moving+c.live > opts.ReuploadBytes {
			break
		}
		sparse[c.name] = true
		moving += c.live
	}
	return sparse
}

// liveBytes returns the bytes of o's pieces that some retained checkpoint
// uses.
func (o *regObject) liveBytes() int64 {
	var live int64
	for _, p := range o.Pieces {
		if p.Refs > 0 {
			live += p.Size
		}
	}
	return live
}

// smallSegmentsToMerge adds to emptied the small segments (below half of
// SegmentSize) an upload of files merges: when the checkpoint uses
// MergeSmallSegments of one group and one size tier (sizes within a
// factor of 4), their live pieces are merged into a new segment, which
// is of the next tier: a tiered merge, so that each byte moves about
// log4(SegmentSize/increment) times.
func smallSegmentsToMerge(r *registry, files []*localFile, opts *UploadOptions, emptied map[string]bool) {
	if opts.MergeSmallSegments <= 0 {
		return
	}
	type tier struct{ group, tier int }
	small := map[tier]map[string]bool{}
	for _, f := range files {
		if !f.stored || emptied[f.ref.Object] {
			continue
		}
		o := r.Objects[f.ref.Object]
		// Not tables alone: compactions rewrite them often enough that
		// merging their segments moves bytes about to die (measured:
		// more bytes uploaded, no fewer objects).
		if o.Segment && o.Group == groupVlogs && o.Size < opts.SegmentSize/2 {
			k := tier{o.Group, bits.Len64(uint64(o.Size)) / 2}
			if small[k] == nil {
				small[k] = map[string]bool{}
			}
			small[k][f.ref.Object] = true
		}
	}
	for _, names := range small {
		if len(names) >= opts.MergeSmallSegments {
			for name := range names {
				emptied[name] = true
			}
		}
	}
}

// planWrites returns what an upload of files writes, given the segments
// of r it empties: the files r does not hold, those it holds in a segment
// emptied (moved: read from the database's files, or copied within the
// store by composeObject; a shared file's piece is copied from the store
// either way, since a database opened from a checkpoint reads that very
// piece and has no local copy), and then the live pieces of those
// segments that the checkpoint does not use (files the database has
// deleted since), copied from the store into segments of their own: they
// die as the older checkpoints that use them are dropped.
//
// A piece moves once, even when the checkpoint names it twice (two
// virtual tables of one table, in a database opened from the union of
// checkpoints that each hold a part of it): the first file that names it
// moves it with all its references, and record points the others at its
// new place, as it does the older checkpoints.
func planWrites(r *registry, files []*localFile, emptied map[string]bool) []*localFile {
	var writes []*localFile
	moved := map[pieceRef]bool{}
	for _, f := range files {
		if f.stored && emptied[f.ref.Object] && !moved[f.ref] {
			moved[f.ref] = true
			f.moveFrom, f.stored, f.reupload = f.ref, false, true
			f.remote = f.shared != nil
		}
		if !f.stored {
			writes = append(writes, f)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(emptied)) {
		for _, p := range r.Objects[name].Pieces {
			ref := pieceRef{name, p.Offset}
			if p.Refs > 0 && !moved[ref] {
				writes = append(writes, &localFile{name: p.File, size: p.Size, checksum: p.Checksum, sumKnown: true,
					moveFrom: ref, reupload: true, remote: true, group: groupExpiring})
			}
		}
	}
	return writes
}

// composeObject stores o by c.Compose. It first orders o's files as the
// object will hold them: the moved pieces in runs of pieces that lie back
// to back in one old object (each run is one range to copy), the longest
// runs first, so that the short ones, which S3 cannot copy, come last
// with the new files, which are sent. The moved pieces keep the checksums
// the registry has for them: the store copies its own bytes, and Restore
// verifies every file it downloads.
func (u *Uploader) composeObject(ctx context.Context, c Composer, src Source, o *plannedObject) error {
	var moved, sent []*localFile
	for _, f := range o.files {
		if f.reupload {
			moved = append(moved, f)
		} else {
			sent = append(sent, f)
		}
	}
	slices.SortFunc(moved, func(a, b *localFile) int {
		return cmp.Or(cmp.Compare(a.moveFrom.Object, b.moveFrom.Object), cmp.Compare(a.moveFrom.Offset, b.moveFrom.Offset))
	})
	type run struct {
		files []*localFile
		part  Part
	}
	var runs []*run
	for _, f := range moved {
		if n := len(runs); n > 0 {
			if p := &runs[n-1].part; p.Object == f.moveFrom.Object && p.Offset+p.Length == f.moveFrom.Offset {
				p.Length += f.size
				runs[n-1].files = append(runs[n-1].files, f)
				continue
			}
		}
		runs = append(runs, &run{files: []*localFile{f}, part: Part{Object: f.moveFrom.Object, Offset: f.moveFrom.Offset, Length: f.size}})
	}
	slices.SortStableFunc(runs, func(a, b *run) int { return cmp.Compare(b.part.Length, a.part.Length) })
	o.files = o.files[:0]
	var parts []Part
	for _, r := range runs {
		o.files = append(o.files, r.files...)
		parts = append(parts, r.part)
	}
	o.files = append(o.files, sent...)
	fr := &filesReader{ctx: ctx, store: u.store, src: src, files: sent}
	defer fr.close()
	var sentSize int64
	for _, f := range sent {
		sentSize += f.size
	}
	if sentSize > 0 {
		parts = append(parts, Part{R: fr, Length: sentSize})
	}
	copied, err := c.Compose(ctx, o.name, parts)
	if err != nil {
		return err
	}
	if fr.i != len(sent) {
		return fmt.Errorf("checkpoint: compose %s: the store read %d of its %d new files", o.name, fr.i, len(sent))
	}
	o.sums = make([]uint64, len(o.files))
	for i, f := range o.files {
		f.uploadIdx = i
		if i < len(moved) {
			o.sums[i] = f.checksum
		} else {
			o.sums[i] = fr.sums[i-len(moved)]
		}
	}
	o.composed = copied
	return nil
}
