package checkpoint

// This file owns the selection of an upload: the files of the version
// (versionFiles), the checkpoints that go to make room for the new one
// (retire), and which of the files the store already holds (match), by
// name and size, then by checksum. It reads the registry and the
// database's files, and writes nothing.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// The lifetime groups of files: segments hold files of one group.
const (
	groupShortLived = 0 // tables of L0 and L1
	groupTables     = 1 // deeper tables
	groupVlogs      = 2 // value logs
	// Pieces moved out of an emptied segment that only older checkpoints
	// use: they die as those checkpoints are dropped.
	groupExpiring = 3
	numGroups     = 4
)

// localFile is a file of the checkpoint's version.
type localFile struct {
	name     string
	size     int64
	checksum uint64
	sumKnown bool
	ref      pieceRef
	stored   bool // ref names a piece the store holds
	reupload bool // moved out of a sparse or small segment
	moveFrom pieceRef
	// remote: copied from moveFrom in the store rather than read from
	// the database's directory: a piece only older checkpoints use, or a
	// shared file's (which may have no local copy).
	remote    bool
	uploadIdx int
	// shared is where the file's primary copy is, for a shared file of
	// the database: the checkpoint references that object range instead
	// of uploading the file.
	shared *manifest.SharedRef
	// external: stored as a piece of an external object (the shared
	// file's own), whose checksum is not known.
	external bool
	// group keeps files of like lifetimes in the same segments: tables of
	// L0 and L1 (compacted soon), deeper tables, value logs.
	group int
}

// versionFiles lists the tables and value logs of src's version.
func versionFiles(src Source) []*localFile {
	var files []*localFile
	src.Version.Files(func(level int, f *manifest.FileMetadata) {
		group := groupShortLived
		if level > 1 {
			group = groupTables
		}
		lf := &localFile{name: base.MakeFilename(base.FileTypeTable, f.FileNum), size: int64(f.Size), group: group}
		if ref, ok := src.Version.SharedRef(false, f.FileNum); ok {
			lf.shared = &ref
		}
		files = append(files, lf)
	})
	for _, vl := range src.Version.SortedVlogs() {
		lf := &localFile{name: base.MakeFilename(base.FileTypeVlog, vl.FileNum), size: int64(vl.Size), group: groupVlogs}
		if ref, ok := src.Version.SharedRef(true, vl.FileNum); ok {
			lf.shared = &ref
		}
		files = append(files, lf)
	}
	return files
}

// retire drops from next the oldest checkpoints beyond KeepLast (the new
// one counted), with their references. Their objects stay in next until
// register drops those no retained checkpoint uses: match may yet find a
// file of the new checkpoint in a piece left with no reference.
func (up *upload) retire() {
	up.dropped = up.next.dropOldest(max(0, len(up.next.Checkpoints)+1-up.u.opts.KeepLast))
}

// dropOldest removes r's n oldest checkpoints, and their references from
// the pieces they use, and returns them.
func (r *registry) dropOldest(n int) []regCheckpoint {
	dropped := r.Checkpoints[:n]
	r.Checkpoints = r.Checkpoints[n:]
	for _, c := range dropped {
		for _, ref := range c.Pieces {
			if p := r.piece(ref); p != nil {
				p.Refs--
			}
		}
	}
	return dropped
}

// match finds which of the version's files next holds (see matchStored),
// with the checksums the uploader caches, reading a file for its checksum
// only when the store holds a piece of its name and size.
func (up *upload) match() error {
	for _, f := range up.files {
		if sum, ok := up.u.sums[fileKey{f.name, f.size}]; ok {
			f.checksum, f.sumKnown = sum, true
		}
	}
	up.external = matchShared(up.next, up.files)
	return matchStored(up.next, up.files, up.checksum)
}

// matchShared references the version's shared files where they are: a
// piece next holds at that place (a database opened from a checkpoint of
// this store reads its files from the checkpoint's objects) takes a
// reference; any other place becomes a piece of an external object (see
// regObject.External). It returns the external objects next did not
// hold, which the registry's marker must hold before the commit.
func matchShared(r *registry, files []*localFile) (added []string) {
	for _, f := range files {
		if f.shared == nil {
			continue
		}
		ref := pieceRef{f.shared.Object, int64(f.shared.Offset)}
		// The place names the bytes (objects are never rewritten): two
		// files of a database may be one piece under two names (virtual
		// tables of one table, in a key range opened by reference).
		if p := r.piece(ref); p != nil && p.Size == f.size {
			p.Refs++
			f.ref, f.stored = ref, true
			f.external = r.Objects[ref.Object].External
			f.checksum, f.sumKnown = p.Checksum, !f.external
			continue
		}
		o := r.Objects[ref.Object]
		if o == nil {
			o = &regObject{External: true}
			r.Objects[ref.Object] = o
			added = append(added, ref.Object)
		}
		i := sort.Search(len(o.Pieces), func(i int) bool { return o.Pieces[i].Offset >= ref.Offset })
		o.Pieces = slices.Insert(o.Pieces, i, regPiece{File: f.name, Size: f.size, Offset: ref.Offset, Refs: 1})
		o.Size = max(o.Size, ref.Offset+f.size)
		// The registry records no checksum of an external piece, so the
		// manifest does not either, even one the uploader knows (of a
		// file it uploaded before it was shared): the two must agree, or
		// the checkpoint cannot be read (ReadManifest).
		f.ref, f.stored, f.external = ref, true, true
		f.checksum, f.sumKnown = 0, false
	}
	return added
}

// checksum reads the XXH64 of f in the database's directory, and caches
// it.
func (up *upload) checksum(f *localFile) (uint64, error) {
	sum, err := checksumFile(up.src, f.name, f.size)
	if err != nil {
		return 0, err
	}
	up.u.sums[fileKey{f.name, f.size}] = sum
	return sum, nil
}

// matchStored finds each of files among the pieces r holds: by name and
// size, then by checksum, which sum gives for a file whose checksum is not
// known (it is asked only for a file of whose name and size r holds a
// piece). Of several copies, the newest object's is chosen. A file found
// is stored, at f.ref, and takes a reference on its piece (which a
// retired checkpoint may have left with none); the others are to be
// uploaded.
func matchStored(r *registry, files []*localFile, sum func(*localFile) (uint64, error)) error {
	held := heldPieces(r)
	for _, f := range files {
		if f.stored {
			continue // a shared file, referenced where it is
		}
		cands := held[fileKey{f.name, f.size}]
		if len(cands) == 0 {
			continue
		}
		if !f.sumKnown {
			s, err := sum(f)
			if err != nil {
				return err
			}
			f.checksum, f.sumKnown = s, true
		}
		for _, ref := range cands {
			if p := r.piece(ref); p != nil && p.Checksum == f.checksum {
				p.Refs++
				f.ref, f.stored = ref, true
				break
			}
		}
	}
	return nil
}

// heldPieces indexes the pieces r holds by file name and size, each
// file's newest first.
func heldPieces(r *registry) map[fileKey][]pieceRef {
	held := map[fileKey][]pieceRef{}
	for name, o := range r.Objects {
		if o.External {
			continue // a shared file's: matched by place only (matchShared)
		}
		for _, p := range o.Pieces {
			k := fileKey{p.File, p.Size}
			held[k] = append(held[k], pieceRef{name, p.Offset})
		}
	}
	for _, refs := range held {
		slices.SortFunc(refs, func(a, b pieceRef) int { return cmp.Compare(b.Object, a.Object) }) // newest first
	}
	return held
}

// checksumFile returns the XXH64 of the size bytes of src's file name.
func checksumFile(src Source, name string, size int64) (uint64, error) {
	path := src.FS.PathJoin(src.Dir, name)
	f, err := src.open(name)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	h := xxhash.New()
	n, err := io.Copy(h, io.LimitReader(f, size))
	if err != nil {
		return 0, fmt.Errorf("checkpoint: read %s: %w", path, err)
	}
	if n != size {
		return 0, fmt.Errorf("checkpoint: %s is %d bytes, the version records %d", path, n, size)
	}
	return h.Sum64(), nil
}
