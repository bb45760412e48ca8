package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// UploadOptions configure an Uploader. The zero value of each field means
// its default.
type UploadOptions struct {
	// KeepLast is how many checkpoints the store retains (default 3); an
	// upload that commits drops the oldest ones beyond it, and the objects
	// only they used.
	KeepLast int
	// SmallFileSize: files smaller than this (bytes, default SegmentSize)
	// are packed into segment objects; larger ones get an object each.
	SmallFileSize int64
	// SegmentSize is the size a segment is filled to (bytes, default
	// 1 GiB; a segment may exceed it by less than one small file). Larger
	// segments mean fewer objects and more bytes moved when they empty
	// (see the package documentation for the trade).
	SegmentSize int64
	// MinLiveRatio (default 0.75) is the share of a segment's bytes that
	// retained checkpoints must use for it to be kept as it is: below it,
	// an upload moves its live pieces into new objects, points every
	// retained checkpoint at their new place, and deletes it.
	MinLiveRatio float64
	// MergeSmallSegments (default 2; negative: never) is how many small
	// segments of value logs (below half of SegmentSize) of one size tier
	// (sizes within a factor of 4) the checkpoint must use before their
	// live pieces are merged into one new segment: frequent checkpoints
	// make a small segment each, and merging them a few at a time (each
	// byte moves about log4(SegmentSize/increment) times) keeps the object
	// count down.
	MergeSmallSegments int
	// ReuploadBytes (default SegmentSize) bounds the live bytes an upload
	// moves out of sparse segments, the sparsest first, so that one upload
	// does not move them all at once; it moves at least one segment when
	// any is below MinLiveRatio.
	ReuploadBytes int64
	// Parallelism is how many objects are uploaded at once (default 4).
	Parallelism int
}

func (o *UploadOptions) withDefaults() (UploadOptions, error) {
	var r UploadOptions
	if o != nil {
		r = *o
	}
	var problems []string
	if r.KeepLast < 0 {
		problems = append(problems, fmt.Sprintf("KeepLast %d is negative", r.KeepLast))
	}
	if r.SmallFileSize < 0 || r.SegmentSize < 0 || r.ReuploadBytes < 0 {
		problems = append(problems, "SmallFileSize, SegmentSize and ReuploadBytes must not be negative")
	}
	if r.MinLiveRatio < 0 || r.MinLiveRatio > 1 {
		problems = append(problems, fmt.Sprintf("MinLiveRatio %g is outside [0, 1]", r.MinLiveRatio))
	}
	if r.Parallelism < 0 {
		problems = append(problems, fmt.Sprintf("Parallelism %d is negative", r.Parallelism))
	}
	if len(problems) > 0 {
		return r, fmt.Errorf("checkpoint: invalid upload options: %s", strings.Join(problems, "; "))
	}
	if r.KeepLast == 0 {
		r.KeepLast = 3
	}
	if r.SegmentSize == 0 {
		r.SegmentSize = 1 << 30
	}
	if r.SmallFileSize == 0 {
		r.SmallFileSize = r.SegmentSize
	}
	if r.MinLiveRatio == 0 {
		r.MinLiveRatio = 0.75
	}
	if r.ReuploadBytes == 0 {
		r.ReuploadBytes = r.SegmentSize
	}
	if r.Parallelism == 0 {
		r.Parallelism = 4
	}
	if r.MergeSmallSegments == 0 {
		r.MergeSmallSegments = 2
	}
	return r, nil
}

// Uploader writes incremental checkpoints of one database into a Store.
// It remembers the checksums of the files it has seen, so it must not be
// shared between databases; a new Uploader (after a restart) finds the
// files the store already holds by name, size and checksum. One store
// takes checkpoints from one Uploader at a time: uploads through one
// Uploader are serialized, but two Uploaders on one store would race.
type Uploader struct {
	store Store
	opts  UploadOptions

	// mu serializes uploads and, in UploadPinned, the pinning of the
	// state each one uploads, so that the ids of those follow their states.
	mu   sync.Mutex
	sums map[fileKey]uint64 // checksums of files seen, by name and size
}

type fileKey struct {
	name string
	size int64
}

// NewUploader returns an Uploader into s.
func NewUploader(s Store, opts *UploadOptions) (*Uploader, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Uploader{store: s, opts: o, sums: map[fileKey]uint64{}}, nil
}

// Store returns the uploader's store.
func (u *Uploader) Store() Store { return u.store }

// Stats describe one checkpoint upload and the store after it.
type Stats struct {
	ID uint64
	// Files and Bytes: the checkpoint's tables and value logs.
	Files int
	Bytes int64
	// UploadedFiles and UploadedBytes: what this upload wrote, data and
	// the registry (UploadedBytes counts everything sent).
	UploadedFiles int
	UploadedBytes int64
	// NewBytes are the bytes of files the store did not hold before;
	// ReuploadedBytes those of pieces moved out of sparse segments or
	// merged out of small ones.
	NewBytes        int64
	ReuploadedBytes int64
	// CopiedBytes, of ReuploadedBytes, are those of pieces only older
	// checkpoints use, copied from the store rather than read from the
	// database's files.
	CopiedBytes int64
	// ComposedBytes, of ReuploadedBytes, are those the store copied from
	// its own objects (a Composer): they were moved without being
	// uploaded, and UploadedBytes does not count them.
	ComposedBytes int64
	// StoreBytes are the bytes of every object the registry holds (data,
	// the registry, manifests of format-1 checkpoints); ReferencedBytes
	// the distinct file bytes the retained checkpoints use plus the
	// registry (and format-1 manifests);
	// SpaceAmp = StoreBytes / ReferencedBytes.
	StoreBytes      int64
	ReferencedBytes int64
	SpaceAmp        float64
	// ReferencedFiles counts the distinct files (tables and value logs)
	// the retained checkpoints use: the objects a store of one object per
	// file would hold, besides the registry.
	ReferencedFiles int
	// Objects counts the store's objects (data, the registry, manifests
	// of format-1 checkpoints), of which Segments are segment objects.
	Objects  int
	Segments int
	// Retained counts the checkpoints the store keeps.
	Retained int
	// DeletedObjects counts the objects this upload deleted (data no
	// retained checkpoint uses, format-1 manifests dropped, leftovers
	// of failed uploads); CleanupErrors the deletions that failed, which
	// the next upload retries.
	DeletedObjects int
	CleanupErrors  int
	Duration       time.Duration
}

func (s Stats) String() string {
	return fmt.Sprintf("checkpoint %d: %d files, %d bytes; uploaded %d objects, %d bytes (%d new, %d re-uploaded); store %d objects (%d segments), %d bytes, referenced %d files, %d bytes, space amp %.3f; %d retained; deleted %d (%d failed); %s",
		s.ID, s.Files, s.Bytes, s.UploadedFiles, s.UploadedBytes, s.NewBytes, s.ReuploadedBytes, s.Objects, s.Segments,
		s.StoreBytes, s.ReferencedFiles, s.ReferencedBytes, s.SpaceAmp, s.Retained, s.DeletedObjects, s.CleanupErrors, s.Duration.Round(time.Millisecond))
}

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
	// remote: a piece only older checkpoints use, copied from moveFrom in
	// the store rather than read from the database's directory.
	remote    bool
	uploadIdx int
	// group keeps files of like lifetimes in the same segments: tables of
	// L0 and L1 (compacted soon), deeper tables, value logs.
	group int
}

// Upload writes a checkpoint of src, whose version must stay pinned (its
// files undeleted) until Upload returns. It uploads the files the store
// does not hold, and the registry with the checkpoint's manifest, whose
// replacement commits the checkpoint; then it deletes what no retained checkpoint needs.
// If it fails before the commit, it deletes what it uploaded and the
// store holds what it held before.
//
// Uploads through u are serialized, but src was pinned before: of two
// callers that pin and then call Upload, the later to pin may commit
// first, and the older state then gets the higher id. UploadPinned pins
// in turn.
func (u *Uploader) Upload(ctx context.Context, src Source) (Stats, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.uploadLocked(ctx, src)
}

// UploadPinned writes a checkpoint of the state pin pins, as Upload does:
// pin runs once the uploads ahead of it through u are done, pins a state
// and calls upload with it (once), keeping it pinned until upload
// returns, and returns upload's error or its own. So checkpoint ids
// follow the states they hold: of two calls, the one that pins the newer
// state commits the higher id (DB.CheckpointToStore uses it).
func (u *Uploader) UploadPinned(ctx context.Context, pin func(upload func(Source) error) error) (Stats, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var (
		stats    Stats
		uploaded bool
	)
	err := pin(func(src Source) error {
		if uploaded {
			return errors.New("checkpoint: UploadPinned's pin called upload twice")
		}
		uploaded = true
		var err error
		stats, err = u.uploadLocked(ctx, src)
		return err
	})
	if err == nil && !uploaded {
		err = errors.New("checkpoint: UploadPinned's pin returned without calling upload")
	}
	if err != nil {
		return Stats{}, err
	}
	return stats, nil
}

// uploadLocked is Upload, with u.mu held.
func (u *Uploader) uploadLocked(ctx context.Context, src Source) (Stats, error) {
	start := time.Now()
	cur, _, err := loadRegistry(ctx, u.store)
	if err != nil {
		return Stats{}, err
	}
	next := cur.clone()
	id := next.NextID
	next.NextID++
	stats := Stats{ID: id}

	files := versionFiles(src)
	// Index what the store holds by name and size.
	held := map[fileKey][]pieceRef{}
	for name, o := range next.Objects {
		for _, p := range o.Pieces {
			k := fileKey{p.File, p.Size}
			held[k] = append(held[k], pieceRef{name, p.Offset})
		}
	}
	for _, refs := range held {
		slices.SortFunc(refs, func(a, b pieceRef) int { return cmp.Compare(b.Object, a.Object) }) // newest first
	}

	// Retention: the new checkpoint joins; the oldest beyond KeepLast go.
	nDrop := max(0, len(next.Checkpoints)+1-u.opts.KeepLast)
	dropped := next.Checkpoints[:nDrop]
	next.Checkpoints = next.Checkpoints[nDrop:]
	for _, c := range dropped {
		for _, ref := range c.Pieces {
			if p := next.piece(ref); p != nil {
				p.Refs--
			}
		}
	}

	// Match the files with pieces the store holds.
	for _, f := range files {
		stats.Files++
		stats.Bytes += f.size
		if sum, ok := u.sums[fileKey{f.name, f.size}]; ok {
			f.checksum, f.sumKnown = sum, true
		}
		cands := held[fileKey{f.name, f.size}]
		if len(cands) == 0 {
			continue
		}
		if !f.sumKnown {
			sum, err := checksumFile(src.FS, src.FS.PathJoin(src.Dir, f.name), f.size)
			if err != nil {
				return Stats{}, err
			}
			f.checksum, f.sumKnown = sum, true
			u.sums[fileKey{f.name, f.size}] = sum
		}
		for _, ref := range cands {
			if p := next.piece(ref); p != nil && p.Checksum == f.checksum {
				p.Refs++
				f.ref, f.stored = ref, true
				break
			}
		}
	}
	// Segments to empty: those whose live share (bytes of pieces some
	// retained checkpoint uses, over the segment's size) fell below
	// MinLiveRatio, the sparsest first, up to ReuploadBytes of live pieces
	// per upload (at least one segment); and small segments merged (below).
	// Every live piece of such a segment moves to a new object, and every
	// retained checkpoint that uses it is pointed at the new place, so the
	// old segment is deleted by this very upload: nothing is stored twice.
	liveBytes := func(o *regObject) int64 {
		var live int64
		for _, p := range o.Pieces {
			if p.Refs > 0 {
				live += p.Size
			}
		}
		return live
	}
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
	for name, o := range next.Objects {
		// A segment of expiring pieces dies whole with the checkpoints
		// that use it: moving it would only move bytes about to die. (The
		// new checkpoint uses one only if a file was stored twice, by an
		// earlier policy that re-uploaded without moving: then it does
		// not die, and is emptied as any other.)
		if !o.Segment || o.Size == 0 || (o.Group == groupExpiring && !used[name]) {
			continue
		}
		if live := liveBytes(o); live > 0 && float64(live)/float64(o.Size) < u.opts.MinLiveRatio {
			cands = append(cands, sparseSeg{name, live})
		}
	}
	slices.SortFunc(cands, func(a, b sparseSeg) int {
		ra := float64(a.live) / float64(next.Objects[a.name].Size)
		rb := float64(b.live) / float64(next.Objects[b.name].Size)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(a.name, b.name))
	})
	sparse := map[string]bool{}
	var moving int64
	for _, c := range cands {
		if moving > 0 && moving+c.live > u.opts.ReuploadBytes {
			break
		}
		sparse[c.name] = true
		moving += c.live
	}
	// Small segments (below half of SegmentSize): when the checkpoint uses
	// MergeSmallSegments of one group and one size tier (sizes within a
	// factor of 4), their live pieces are merged into a new segment, which
	// is of the next tier: a tiered merge, so that each byte moves about
	// log4(SegmentSize/increment) times.
	if u.opts.MergeSmallSegments > 0 {
		type tier struct{ group, tier int }
		small := map[tier]map[string]bool{}
		for _, f := range files {
			if !f.stored || sparse[f.ref.Object] {
				continue
			}
			o := next.Objects[f.ref.Object]
			// Not tables alone: compactions rewrite them often enough that
			// merging their segments moves bytes about to die (measured:
			// more bytes uploaded, no fewer objects).
			if o.Segment && o.Group == groupVlogs && o.Size < u.opts.SegmentSize/2 {
				k := tier{o.Group, bits.Len64(uint64(o.Size)) / 2}
				if small[k] == nil {
					small[k] = map[string]bool{}
				}
				small[k][f.ref.Object] = true
			}
		}
		for _, names := range small {
			if len(names) >= u.opts.MergeSmallSegments {
				for name := range names {
					sparse[name] = true
				}
			}
		}
	}
	var upload []*localFile
	for _, f := range files {
		if f.stored && sparse[f.ref.Object] {
			f.moveFrom, f.stored, f.reupload = f.ref, false, true
		}
		if !f.stored {
			upload = append(upload, f)
		}
	}
	// The live pieces of the emptied segments that this checkpoint does
	// not use (files the database has deleted since) are copied from the
	// store, into segments of their own: they die as the older checkpoints
	// that use them are dropped.
	moved := map[pieceRef]bool{}
	for _, f := range upload {
		if f.reupload {
			moved[f.moveFrom] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sparse)) {
		for _, p := range next.Objects[name].Pieces {
			ref := pieceRef{name, p.Offset}
			if p.Refs > 0 && !moved[ref] {
				upload = append(upload, &localFile{name: p.File, size: p.Size, checksum: p.Checksum, sumKnown: true,
					moveFrom: ref, reupload: true, remote: true, group: groupExpiring})
			}
		}
	}

	// From here on the upload writes objects; on failure before the commit
	// it deletes them.
	var written []string
	committed := false
	defer func() {
		if !committed {
			u.deleteBestEffort(written)
		}
	}()

	objs := u.planObjects(id, upload)
	var wmu sync.Mutex
	err = runParallel(ctx, u.opts.Parallelism, len(objs), func(ctx context.Context, i int) error {
		o := objs[i]
		wmu.Lock()
		written = append(written, o.name)
		wmu.Unlock()
		return u.putObject(ctx, src, o)
	})
	if err != nil {
		return Stats{}, err
	}
	relocated := map[pieceRef]pieceRef{}
	for _, o := range objs {
		ro := &regObject{Size: o.size, Segment: o.segment, Group: o.group}
		var off int64
		for _, f := range o.files {
			if f.sumKnown && f.checksum != o.sums[f.uploadIdx] {
				if f.remote {
					return Stats{}, base.CorruptionErrorf(f.moveFrom.Object, f.moveFrom.Offset, "%s (%d bytes): checksum mismatch: registry %016x, read %016x",
						f.name, f.size, f.checksum, o.sums[f.uploadIdx])
				}
				return Stats{}, base.CorruptionErrorf(f.name, -1, "file changed while checkpointed: checksum %016x, earlier %016x", o.sums[f.uploadIdx], f.checksum)
			}
			f.checksum, f.sumKnown = o.sums[f.uploadIdx], true
			if !f.remote {
				u.sums[fileKey{f.name, f.size}] = f.checksum
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
	for i := range next.Checkpoints {
		for j, ref := range next.Checkpoints[i].Pieces {
			if to, ok := relocated[ref]; ok {
				next.Checkpoints[i].Pieces[j] = to
			}
		}
	}

	// The checkpoint's manifest.
	m, err := buildManifest(id, src, files)
	if err != nil {
		return Stats{}, err
	}
	ck := regCheckpoint{ID: id, Manifest: m}
	for _, f := range files {
		ck.Pieces = append(ck.Pieces, f.ref)
	}
	next.Checkpoints = append(next.Checkpoints, ck)
	next.Format = registryFormat

	// Objects no retained checkpoint uses leave the registry.
	var deletions []string
	for _, c := range dropped {
		if c.Manifest == nil { // a format-1 checkpoint's manifest object
			deletions = append(deletions, manifestName(c.ID))
		}
	}
	for name, o := range next.Objects {
		live := false
		for _, p := range o.Pieces {
			live = live || p.Refs > 0
		}
		if !live {
			delete(next.Objects, name)
			deletions = append(deletions, name)
		}
	}
	if err := next.check(); err != nil {
		return Stats{}, fmt.Errorf("checkpoint: the registry built is inconsistent (a bug): %w", err)
	}

	// The commit: replacing the registry.
	rb, err := seal(next)
	if err != nil {
		return Stats{}, fmt.Errorf("checkpoint: encode registry: %w", err)
	}
	if err := u.store.Put(ctx, registryName, strings.NewReader(string(rb)), int64(len(rb))); err != nil {
		// The Put may have replaced the registry before failing (a failed
		// directory sync after the rename, a lost response): look.
		got, _, lerr := loadRegistry(ctx, u.store)
		switch {
		case lerr != nil:
			committed = true // unknown: delete nothing, the next upload sweeps
			return Stats{}, fmt.Errorf("%w (and the registry cannot be read back: %v)", err, lerr)
		case got.NextID != next.NextID:
			return Stats{}, err
		}
	}
	committed = true
	stats.UploadedFiles++
	stats.UploadedBytes += int64(len(rb))

	// Delete what nothing needs, and any leftovers of failed uploads.
	keep := map[string]bool{registryName: true}
	for name := range next.Objects {
		keep[name] = true
	}
	for _, c := range next.Checkpoints {
		if c.Manifest == nil {
			keep[manifestName(c.ID)] = true
		}
	}
	for _, prefix := range []string{dataPrefix, manifestPrefix} {
		list, err := u.store.List(ctx, prefix)
		if err != nil {
			stats.CleanupErrors++
			continue
		}
		for _, o := range list {
			if !keep[o.Name] && !slices.Contains(deletions, o.Name) {
				deletions = append(deletions, o.Name)
			}
		}
	}
	for _, name := range deletions {
		if err := u.store.Delete(ctx, name); err != nil {
			stats.CleanupErrors++
		} else {
			stats.DeletedObjects++
		}
	}
	// Keep only the checksums of the version's files, so that the cache
	// does not grow with every file the database ever had.
	live := make(map[fileKey]uint64, len(files))
	for _, f := range files {
		if f.sumKnown {
			live[fileKey{f.name, f.size}] = f.checksum
		}
	}
	u.sums = live
	next.fillStats(&stats, int64(len(rb)))
	stats.Duration = time.Since(start)
	return stats, nil
}

// fillStats sets the store figures of s from the registry r, whose own
// encoding is regSize bytes.
func (r *registry) fillStats(s *Stats, regSize int64) {
	s.StoreBytes, s.ReferencedBytes = regSize, regSize
	s.Objects = 1 + len(r.Objects)
	s.Retained = len(r.Checkpoints)
	for _, c := range r.Checkpoints {
		if c.Manifest == nil { // format 1: an object of its own
			s.Objects++
			s.StoreBytes += c.ManifestSize
			s.ReferencedBytes += c.ManifestSize
		}
	}
	type ident struct {
		name string
		size int64
		sum  uint64
	}
	seen := map[ident]bool{}
	for _, o := range r.Objects {
		s.StoreBytes += o.Size
		if o.Segment {
			s.Segments++
		}
		for _, p := range o.Pieces {
			id := ident{p.File, p.Size, p.Checksum}
			if p.Refs > 0 && !seen[id] {
				seen[id] = true
				s.ReferencedBytes += p.Size
				s.ReferencedFiles++
			}
		}
	}
	if s.ReferencedBytes > 0 {
		s.SpaceAmp = float64(s.StoreBytes) / float64(s.ReferencedBytes)
	}
}

// versionFiles lists the tables and value logs of src's version.
func versionFiles(src Source) []*localFile {
	var files []*localFile
	src.Version.Files(func(level int, f *manifest.FileMetadata) {
		group := groupShortLived
		if level > 1 {
			group = groupTables
		}
		files = append(files, &localFile{name: base.MakeFilename(base.FileTypeTable, f.FileNum), size: int64(f.Size), group: group})
	})
	for _, vl := range src.Version.SortedVlogs() {
		files = append(files, &localFile{name: base.MakeFilename(base.FileTypeVlog, vl.FileNum), size: int64(vl.Size), group: groupVlogs})
	}
	return files
}

// plannedObject is a data object to upload: one large file, or a segment
// of small ones.
type plannedObject struct {
	name    string
	files   []*localFile
	size    int64
	segment bool
	group   int
	sums    []uint64 // per file, by uploadIdx, filled by putObject
	// composed: bytes of the object the store copied from its own
	// objects, filled by putObject
	composed int64
}

// planObjects groups the files to upload into objects, large files alone
// and small ones packed into segments of about SegmentSize. Files of
// different groups go to different segments: a segment whose files die
// together is deleted whole, with nothing to re-upload.
func (u *Uploader) planObjects(id uint64, files []*localFile) []*plannedObject {
	var objs []*plannedObject
	newObj := func(segment bool, group int) *plannedObject {
		o := &plannedObject{name: fmt.Sprintf("%s%020d-%04d-%08x", dataPrefix, id, len(objs), rand.Uint32()), segment: segment, group: group}
		objs = append(objs, o)
		return o
	}
	// A group with less than an eighth of a segment to upload joins the
	// group with the most: a segment of its own would add an object per
	// checkpoint for a few bytes (with values separated, the tables of a
	// checkpoint are a small share of its bytes), while its pieces in
	// another group's segment lower that segment's live ratio by little
	// when they die.
	var bytes [numGroups]int64
	for _, f := range files {
		if f.size < u.opts.SmallFileSize {
			bytes[f.group] += f.size
		}
	}
	pool := 0
	for g := range groupExpiring {
		if bytes[g] > bytes[pool] {
			pool = g
		}
	}
	segGroup := func(g int) int {
		if g != groupExpiring && bytes[g] < u.opts.SegmentSize/8 {
			return pool
		}
		return g
	}
	segs := map[int]*plannedObject{}
	for _, f := range files {
		var o *plannedObject
		if f.size >= u.opts.SmallFileSize {
			o = newObj(false, f.group)
		} else {
			g := segGroup(f.group)
			if seg := segs[g]; seg == nil || seg.size >= u.opts.SegmentSize {
				segs[g] = newObj(true, g)
			}
			o = segs[g]
		}
		f.uploadIdx = len(o.files)
		o.files = append(o.files, f)
		o.size += f.size
	}
	return objs
}

// putObject uploads o, reading its files from src and computing their
// checksums on the way. Into a Composer, an object holding moved pieces is
// composed: the store copies the pieces from their old objects, and only
// the new files are sent.
func (u *Uploader) putObject(ctx context.Context, src Source, o *plannedObject) error {
	if c, ok := u.store.(Composer); ok && slices.ContainsFunc(o.files, func(f *localFile) bool { return f.reupload }) {
		return u.composeObject(ctx, c, src, o)
	}
	r := &filesReader{ctx: ctx, store: u.store, fs: src.FS, dir: src.Dir, files: o.files}
	defer r.close()
	if err := u.store.Put(ctx, o.name, r, o.size); err != nil {
		return err
	}
	if r.i != len(o.files) {
		return fmt.Errorf("checkpoint: put %s: the store read %d of its %d files", o.name, r.i, len(o.files))
	}
	o.sums = r.sums
	return nil
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
	fr := &filesReader{ctx: ctx, store: u.store, fs: src.FS, dir: src.Dir, files: sent}
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

// filesReader reads files one after the other, each exactly its size,
// computing each one's XXH64.
type filesReader struct {
	ctx   context.Context
	store Store // where remote files are read from
	fs    vfs.FS
	dir   string
	files []*localFile
	i     int
	cur   io.ReadCloser
	lr    *io.LimitedReader
	h     *xxhash.Digest
	sums  []uint64
}

func (r *filesReader) Read(p []byte) (int, error) {
	for {
		if r.i == len(r.files) {
			return 0, io.EOF
		}
		f := r.files[r.i]
		if r.cur == nil {
			var file io.ReadCloser
			var err error
			if f.remote {
				file, err = r.store.Get(r.ctx, f.moveFrom.Object, f.moveFrom.Offset, f.size)
			} else {
				file, err = r.fs.Open(r.fs.PathJoin(r.dir, f.name))
			}
			if err != nil {
				return 0, fmt.Errorf("checkpoint: %w", err)
			}
			r.cur, r.lr, r.h = file, &io.LimitedReader{R: file, N: f.size}, xxhash.New()
		}
		n, err := r.lr.Read(p)
		r.h.Write(p[:n])
		if err == io.EOF || (err == nil && r.lr.N == 0) {
			if r.lr.N != 0 {
				return n, fmt.Errorf("checkpoint: %s is %d bytes shorter than the %d the version records", f.name, r.lr.N, f.size)
			}
			r.sums = append(r.sums, r.h.Sum64())
			r.cur.Close()
			r.cur = nil
			r.i++
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, fmt.Errorf("checkpoint: read %s: %w", f.name, err)
		}
		return n, nil
	}
}

func (r *filesReader) close() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// checksumFile returns the XXH64 of the size bytes of the file at path.
func checksumFile(fs vfs.FS, path string, size int64) (uint64, error) {
	f, err := fs.Open(path)
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

// buildManifest describes the checkpoint: its files and a strata manifest
// of its version.
func buildManifest(id uint64, src Source, files []*localFile) (*Manifest, error) {
	m := &Manifest{ID: id, Time: time.Now().UnixNano(), LastSeq: src.LastSeq}
	for _, f := range files {
		m.Files = append(m.Files, FileRef{Name: f.name, Size: f.size, Checksum: f.checksum, Object: f.ref.Object, Offset: f.ref.Offset})
	}
	// As a local checkpoint: the manifest and CURRENT's temporary file
	// take numbers past everything the version holds, and the log number
	// is past them, so no WAL is replayed.
	m.ManifestNum = src.NextFileNum
	m.NextFileNum = src.NextFileNum + 2
	b, err := encodeDBManifest(src.Version, m.ManifestNum, m.NextFileNum, src.LastSeq)
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

// deleteBestEffort deletes names, ignoring errors: what a failed upload
// wrote. Whatever remains, the next upload's sweep deletes.
func (u *Uploader) deleteBestEffort(names []string) {
	ctx := context.Background()
	for _, name := range names {
		_ = u.store.Delete(ctx, name)
	}
}

// runParallel runs fn(ctx, i) for i in [0, n) on up to workers goroutines,
// and returns the first error; after one, the rest are not started and
// ctx is cancelled for those running.
func runParallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		nextIdx  int
		wg       sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if firstErr != nil || nextIdx == n {
					mu.Unlock()
					return
				}
				i := nextIdx
				nextIdx++
				mu.Unlock()
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err() // the caller's context, done before the end
	}
	return firstErr
}
