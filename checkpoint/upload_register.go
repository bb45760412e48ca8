package checkpoint

// This file owns the registry an upload commits: the objects it wrote
// entered into it (record), the new checkpoint added with its manifest and
// the unused objects dropped (register), and the Put that replaces the
// store's registry with it (commit), the one point at which the upload
// takes effect.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// record enters the objects write put into next, each piece with the
// checksum computed as it was read: a file whose checksum was known
// (cached, or read by match) must have kept it, or it changed while
// checkpointed, and a piece copied from the store must have the checksum
// the registry holds, or the store damaged it; either fails the upload.
// A moved piece takes its references along, leaving none at its old
// place, and every retained checkpoint that used the old place is pointed
// at the new one. It writes nothing: a checksum is checked before the
// registry may name the object.
func (up *upload) record() error {
	next, stats := up.next, &up.stats
	relocated := map[pieceRef]pieceRef{}
	for _, o := range up.objs {
		// write put the registry's marker before the object
		ro := &regObject{Size: o.size, Segment: o.segment, Group: o.group, Marked: true}
		var off int64
		for _, f := range o.files {
			if f.sumKnown && f.checksum != o.sums[f.uploadIdx] {
				if f.remote {
					return base.CorruptionErrorf(f.moveFrom.Object, f.moveFrom.Offset, "%s (%d bytes): checksum mismatch: registry %016x, read %016x",
						f.name, f.size, f.checksum, o.sums[f.uploadIdx])
				}
				return base.CorruptionErrorf(f.name, -1, "file changed while checkpointed: checksum %016x, earlier %016x", o.sums[f.uploadIdx], f.checksum)
			}
			f.checksum, f.sumKnown = o.sums[f.uploadIdx], true
			if !f.remote {
				up.u.sums[fileKey{f.name, f.size}] = f.checksum
			}
			refs := 1
			if f.reupload {
				// The piece keeps its references: every retained
				// checkpoint that used it at its old place uses it here.
				old := next.piece(f.moveFrom)
				refs, old.Refs = old.Refs, 0
				relocated[f.moveFrom] = pieceRef{o.name, off}
			}
			ro.Pieces = append(ro.Pieces, regPiece{File: f.name, Size: f.size, Checksum: f.checksum, Offset: off, Refs: refs})
			f.ref, f.stored = pieceRef{o.name, off}, true
			off += f.size
			if f.reupload {
				stats.ReuploadedBytes += f.size
				if f.remote {
					stats.CopiedBytes += f.size
				}
			} else {
				stats.NewBytes += f.size
			}
		}
		next.Objects[o.name] = ro
		stats.UploadedFiles++
		stats.UploadedBytes += o.size - o.composed
		stats.ComposedBytes += o.composed
	}
	next.repoint(relocated)
	// A file of this checkpoint that names a piece another of its files
	// moved (see planWrites) follows it too.
	for _, f := range up.files {
		if to, ok := relocated[f.ref]; ok && f.stored {
			f.ref = to
		}
	}
	return nil
}

// repoint points the retained checkpoints of r that use a piece moved
// (a key of moved) at its new place.
func (r *registry) repoint(moved map[pieceRef]pieceRef) {
	for i := range r.Checkpoints {
		for j, ref := range r.Checkpoints[i].Pieces {
			if to, ok := moved[ref]; ok {
				r.Checkpoints[i].Pieces[j] = to
			}
		}
	}
}

// register adds the new checkpoint, with its manifest, to next, drops
// from next the objects no retained checkpoint uses (unused lists them
// for the sweep), and checks next's invariants: what commit will make the
// store's registry.
func (up *upload) register() error {
	m, err := buildManifest(up.id, up.src, up.files)
	if err != nil {
		return err
	}
	ck := regCheckpoint{ID: up.id, Manifest: m}
	for _, f := range up.files {
		ck.Pieces = append(ck.Pieces, f.ref)
	}
	up.next.Checkpoints = append(up.next.Checkpoints, ck)
	up.next.Format = registryFormat
	up.unused = dropUnused(up.next, up.dropped)
	if err := up.next.check(); err != nil {
		return fmt.Errorf("checkpoint: the registry built is inconsistent (a bug): %w", err)
	}
	return nil
}

// commit replaces the store's registry with next: the Put that makes the
// checkpoint, the moves and the drops take effect at once.
//
// Crash safety: it runs only once every object next names is in the store
// (write's Puts returned), and sweep runs only once it has returned. If
// the Put fails, the registry is read back, since the Put may have
// replaced it before failing (a failed directory sync after the rename, a
// lost response): the upload committed if the store's registry is next.
// If the registry cannot be read, whether it committed is unknown: commit
// fails, but marks the upload committed, so that abort deletes nothing
// next may name (the next upload's sweep deletes what no registry names).
func (up *upload) commit() error {
	rb, err := seal(up.next)
	if err != nil {
		return fmt.Errorf("checkpoint: encode registry: %w", err)
	}
	if err := up.u.store.Put(up.ctx, up.u.reg.object, strings.NewReader(string(rb)), int64(len(rb))); err != nil {
		// The Put may have replaced the registry before failing: look.
		got, _, lerr := loadRegistry(up.ctx, up.u.store)
		switch {
		case lerr != nil:
			up.committed = true // unknown: delete nothing, the next upload sweeps
			return fmt.Errorf("%w (and the registry cannot be read back: %v)", err, lerr)
		case got.NextID != up.next.NextID:
			return err
		}
	}
	up.committed = true
	up.regSize = int64(len(rb))
	up.stats.UploadedFiles++
	up.stats.UploadedBytes += up.regSize
	return nil
}

// buildManifest describes the checkpoint: its files and a strata manifest
// of its version.
func buildManifest(id uint64, src Source, files []*localFile) (*Manifest, error) {
	m := &Manifest{ID: id, Time: time.Now().UnixNano(), LastSeq: src.LastSeq}
	for _, f := range files {
		m.Files = append(m.Files, FileRef{Name: f.name, Size: f.size, Checksum: f.checksum, Object: f.ref.Object, Offset: f.ref.Offset, External: f.external})
	}
	// As a local checkpoint: the manifest and CURRENT's temporary file
	// take numbers past everything the version holds, and the log number
	// is past them, so no WAL is replayed.
	m.ManifestNum = src.NextFileNum
	m.NextFileNum = src.NextFileNum + 2
	b, err := encodeDBManifest(src.Version.Detached(), m.ManifestNum, m.NextFileNum, src.LastSeq)
	if err != nil {
		return nil, err
	}
	m.DBManifest = b
	return m, nil
}

// encodeDBManifest returns the bytes of a strata manifest holding one
// snapshot of v.
func encodeDBManifest(v *manifest.Version, num, next base.FileNum, lastSeq base.SeqNum) ([]byte, error) {
	mem := vfs.NewMem()
	w, err := manifest.WriteSnapshot(mem, "", num, v, next, lastSeq, next+1)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	f, err := mem.Open(base.MakeFilename(base.FileTypeManifest, num))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	return io.ReadAll(f)
}
