package checkpoint

// This file holds the Uploader, its options and statistics, and an
// upload's sequence of steps (uploadLocked), each of which lives in the
// file that owns its part of the work:
//
//	upload_select.go    retire, match: the version's files, the
//	                    checkpoints that go, the files the store holds
//	upload_move.go      chooseWrites: the segments to empty, and what the
//	                    upload writes: new files and moved pieces
//	upload_pack.go      write: files packed into objects, and their Puts
//	upload_register.go  record, register, commit: the next registry, and
//	                    the Put that commits it
//	upload_sweep.go     sweep, abort: what an upload deletes, and when

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// UploadOptions configure an Uploader. The zero value of each field means
// its default.
type UploadOptions struct {
	// KeepLast is how many checkpoints the registry retains (default 3;
	// each registry of a store its own, see Named); an upload that commits
	// drops the oldest ones beyond it, and the objects only they used.
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
// files the store already holds by name, size and checksum. One registry
// takes checkpoints from one Uploader at a time: uploads through one
// Uploader are serialized, but two Uploaders on one registry would race.
// Several databases checkpoint into one store through views of it with a
// registry each (Named), whose uploads run side by side.
type Uploader struct {
	store Store
	opts  UploadOptions
	// reg is the registry of the store the uploads commit to.
	reg registryID

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
	return &Uploader{store: s, opts: o, reg: registryOf(s), sums: map[fileKey]uint64{}}, nil
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

// upload is one upload in progress: the state its steps hand on to one
// another, in the order they fill it. Only begin, write, commit, sweep
// and abort touch the store; the other steps work on next, a copy of the
// store's registry, and on the files.
type upload struct {
	u     *Uploader
	ctx   context.Context
	src   Source
	start time.Time
	id    uint64 // the new checkpoint's
	// next is the registry being built: the store's, less the checkpoints
	// retire drops, plus the objects record enters and the checkpoint
	// register adds. commit makes it the store's.
	next  *registry
	stats Stats

	files   []*localFile     // the version's tables and value logs (begin)
	dropped []regCheckpoint  // the checkpoints retire dropped from next
	writes  []*localFile     // the files and moved pieces to write (chooseWrites)
	objs    []*plannedObject // the objects write packed them into
	// written names every object write put or began to put: until the
	// commit, abort deletes them.
	written []string
	// unused names what register dropped from next (objects no retained
	// checkpoint uses, manifests of dropped format-1 checkpoints): sweep
	// deletes them once next is committed.
	unused    []string
	committed bool  // the store's registry may be next: abort deletes nothing
	regSize   int64 // the bytes of next as committed
	// external are the shared files' objects next references that the
	// store's registry did not (match): hold marks them before commit.
	external []string
	// held names the objects hold marked: until the commit, abort drops
	// those marks.
	held []string
}

// uploadLocked is Upload, with u.mu held: the steps of an upload, in
// order.
//
// Crash safety rests on one rule: the store's registry, replaced by one
// atomic Put (commit), alone says what the store holds, so objects are
// written before the registry that names them, and deleted only after the
// registry that dropped them. write puts every new object under a name no
// registry holds, and commit runs only once every Put has returned; sweep
// runs only once commit's Put has returned, and deletes only what that
// registry does not name (a moved piece's old segment included: the old
// registry names it until then). A crash at any point leaves the old
// registry or the new one, each naming only objects the store holds; what
// is left besides (the objects of a failed or interrupted upload, the
// deletions of an interrupted sweep), no registry names, and the next
// upload's sweep deletes it.
//
// Objects other holders may use as well (package remote: a database's
// shared files, which a checkpoint references; the data objects a
// database opened from a checkpoint reads) are held by reference
// markers: the registry's (remote.RegistryHolder) is written before the
// Put of a data object and, for a shared file's object, before the
// commit that names it, and dropped after the commit that stops naming
// it; an object goes with its last marker (remote.DropRef).
func (u *Uploader) uploadLocked(ctx context.Context, src Source) (Stats, error) {
	up, err := u.begin(ctx, src)
	if err != nil {
		return Stats{}, err
	}
	up.retire()
	if err := up.match(); err != nil {
		return Stats{}, err
	}
	up.chooseWrites()
	// From here on the upload writes objects; on failure before the commit
	// it deletes them.
	defer up.abort()
	if err := up.write(); err != nil {
		return Stats{}, err
	}
	if err := up.record(); err != nil {
		return Stats{}, err
	}
	if err := up.register(); err != nil {
		return Stats{}, err
	}
	if err := up.hold(); err != nil {
		return Stats{}, err
	}
	if err := up.commit(); err != nil {
		return Stats{}, err
	}
	up.sweep()
	return up.finish(), nil
}

// begin reads the store's registry, starts the next one from a copy of
// it with the new checkpoint's id, and lists the version's files. It
// writes nothing.
func (u *Uploader) begin(ctx context.Context, src Source) (*upload, error) {
	start := time.Now()
	cur, _, err := loadRegistry(ctx, u.store)
	if err != nil {
		return nil, err
	}
	next := cur.clone()
	id := next.NextID
	next.NextID++
	up := &upload{u: u, ctx: ctx, src: src, start: start, id: id, next: next, stats: Stats{ID: id}}
	up.files = versionFiles(src)
	for _, f := range up.files {
		up.stats.Files++
		up.stats.Bytes += f.size
	}
	return up, nil
}

// finish keeps, of the checksums the uploader caches, only those of the
// version's files, so that the cache does not grow with every file the
// database ever had; and returns the upload's statistics, with the store
// figures of the committed registry.
func (up *upload) finish() Stats {
	live := make(map[fileKey]uint64, len(up.files))
	for _, f := range up.files {
		if f.sumKnown {
			live[fileKey{f.name, f.size}] = f.checksum
		}
	}
	up.u.sums = live
	up.next.fillStats(&up.stats, up.regSize)
	up.stats.Duration = time.Since(up.start)
	return up.stats
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
