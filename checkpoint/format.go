package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
)

// The objects of a store that holds incremental checkpoints (see doc.go for
// the diagram):
//
//	registry                 the reference-counted registry: the retained
//	                         checkpoints with their manifests (Manifest),
//	                         every data object and its pieces
//	checkpoints/<id>         a checkpoint's manifest, in stores written
//	                         with registry format 1 only
//	data/<id>-<n>-<random>   a data object: one file, or a segment of
//	                         small files, uploaded by checkpoint <id>
//
// The registry and the manifests are sealed JSON: the JSON text, a
// newline, and a trailer line "xxhash64:<16 hex digits>\n" with the
// XXH64 of the JSON text, so that a damaged or truncated object is an
// error matching strata's ErrCorruption rather than a wrong state.
const (
	registryName   = "registry"
	manifestPrefix = "checkpoints/"
	dataPrefix     = "data/"
	// registryFormat 2 holds each retained checkpoint's manifest; format 1
	// (read, never written) kept it in an object of its own. A registry of
	// a newer format is refused (base.ErrNewerFormat): a newer Strata wrote
	// the store. The manifests inside it carry the database format version
	// of their own (manifest.FormatVersion).
	registryFormat    = 2
	sealTrailerPrefix = "xxhash64:"
)

// Manifest is one checkpoint's description: what Restore needs to rebuild
// the database.
type Manifest struct {
	ID uint64 `json:"id"`
	// Time is when the checkpoint was taken, in Unix nanoseconds.
	Time int64 `json:"time"`
	// Files are the tables and value logs of the checkpoint's version.
	Files []FileRef `json:"files"`
	// DBManifest is a strata manifest describing exactly Files (one
	// snapshot record), to be written as MANIFEST-<ManifestNum>; CURRENT
	// names it. Its log number is past every WAL, so no WAL is replayed.
	DBManifest  []byte       `json:"db_manifest"`
	ManifestNum base.FileNum `json:"manifest_num"`
	LastSeq     base.SeqNum  `json:"last_seq"`
	NextFileNum base.FileNum `json:"next_file_num"`
}

// FileRef is a file of a checkpoint and where its bytes are: Length bytes
// at Offset of the data object Object, whose XXH64 is Checksum.
type FileRef struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Checksum uint64 `json:"xxh64"`
	Object   string `json:"object"`
	Offset   int64  `json:"offset"`
	// External: the bytes are a shared file's (an object the registry
	// references, see regObject.External); Checksum is not known.
	External bool `json:"external,omitempty"`
}

// registry is the reference-counted registry of a store.
//
// INVARIANT: each piece's Refs equals the number of retained checkpoints
// whose Pieces name it; an object is in Objects while any of its pieces
// has Refs > 0 (loadRegistry checks both).
type registry struct {
	Format int    `json:"format"`
	NextID uint64 `json:"next_id"`
	// Checkpoints are the retained checkpoints, oldest first.
	Checkpoints []regCheckpoint       `json:"checkpoints"`
	Objects     map[string]*regObject `json:"objects"`

	// object is the registry's object in the store (not encoded).
	object string
}

type regCheckpoint struct {
	ID uint64 `json:"id"`
	// Manifest is the checkpoint's manifest as it was written (its
	// handles are the pieces' places then; Pieces says where they are
	// now). Nil in a format-1 registry, where it is the object
	// manifestName(ID) of ManifestSize bytes.
	Manifest     *Manifest  `json:"manifest,omitempty"`
	ManifestSize int64      `json:"manifest_size,omitempty"`
	Pieces       []pieceRef `json:"pieces"`
}

type pieceRef struct {
	Object string `json:"object"`
	Offset int64  `json:"offset"`
}

type regObject struct {
	Size int64 `json:"size"`
	// External is set for an object the registry does not own: a shared
	// file of a database (package remote), which a checkpoint references
	// instead of copying. The registry holds it by a reference marker
	// while a retained checkpoint uses it, never uploads, moves or
	// deletes it, and records no checksum of its pieces (the files'
	// own checksums verify them). Size is where its last piece ends.
	External bool `json:"external,omitempty"`
	// Segment is set for objects that pack several small files; Group is
	// the lifetime group of their files (0: tables of L0 and L1, 1: deeper
	// tables, 2: value logs).
	Segment bool       `json:"segment,omitempty"`
	Group   int        `json:"group,omitempty"`
	Pieces  []regPiece `json:"pieces"` // by offset
	// Marked is set for a data object whose upload wrote the registry's
	// reference marker before its Put (every upload since markers
	// exist): a database that opens a checkpoint by reference need not
	// write it again. Objects of older uploads lack it.
	Marked bool `json:"marked,omitempty"`
}

type regPiece struct {
	File     string `json:"file"`
	Size     int64  `json:"size"`
	Checksum uint64 `json:"xxh64"`
	Offset   int64  `json:"offset"`
	Refs     int    `json:"refs"`
}

func manifestName(id uint64) string { return fmt.Sprintf("%s%020d", manifestPrefix, id) }

func parseManifestName(name string) (uint64, bool) {
	if len(name) != len(manifestPrefix)+20 || name[:len(manifestPrefix)] != manifestPrefix {
		return 0, false
	}
	id, err := strconv.ParseUint(name[len(manifestPrefix):], 10, 64)
	return id, err == nil
}

// seal encodes v as sealed JSON.
func seal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	return fmt.Appendf(b, "%s%016x\n", sealTrailerPrefix, xxhash.Sum64(b[:len(b)-1])), nil
}

// unseal checks and decodes sealed JSON read from the object name.
func unseal(name string, b []byte, v any) error {
	trailerLen := len(sealTrailerPrefix) + 16 + 1
	if len(b) < trailerLen+1 || b[len(b)-trailerLen-1] != '\n' || b[len(b)-1] != '\n' ||
		!bytes.HasPrefix(b[len(b)-trailerLen:], []byte(sealTrailerPrefix)) {
		return base.CorruptionErrorf(name, int64(len(b)), "no checksum trailer at the end of the %d bytes", len(b))
	}
	body := b[:len(b)-trailerLen-1]
	hexSum := b[len(b)-17 : len(b)-1]
	want, err := strconv.ParseUint(string(hexSum), 16, 64)
	if err == nil && !bytes.Equal(hexSum, fmt.Appendf(nil, "%016x", want)) {
		err = fmt.Errorf("%q is not 16 lowercase hex digits", hexSum)
	}
	if err != nil {
		return base.CorruptionErrorf(name, int64(len(b)-17), "bad checksum trailer: %v", err)
	}
	if got := xxhash.Sum64(body); got != want {
		return base.CorruptionErrorf(name, 0, "checksum mismatch over %d bytes: stored %016x, computed %016x", len(body), want, got)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return base.CorruptionErrorf(name, 0, "checksum matches but the JSON does not decode: %v", err)
	}
	return nil
}

// loadRegistry reads the registry, or returns an empty one if the store
// has none.
func loadRegistry(ctx context.Context, s Store) (*registry, int64, error) {
	reg := registryOf(s)
	b, err := getAll(ctx, s, reg.object)
	if errors.Is(err, ErrNotExist) {
		return emptyRegistry(reg), 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := decodeRegistry(reg, b)
	if err != nil {
		return nil, 0, err
	}
	return r, int64(len(b)), nil
}

// emptyRegistry is reg before its first checkpoint.
func emptyRegistry(reg registryID) *registry {
	return &registry{Format: registryFormat, NextID: 1, Objects: map[string]*regObject{}, object: reg.object}
}

// decodeRegistry decodes the bytes of registry reg and checks its
// invariants.
func decodeRegistry(reg registryID, b []byte) (*registry, error) {
	r := &registry{}
	if err := unseal(reg.object, b, r); err != nil {
		return nil, err
	}
	r.object = reg.object
	if r.Format > registryFormat {
		return nil, &base.NewerFormatError{File: reg.object, What: "checkpoint registry", Version: uint64(r.Format), Newest: registryFormat}
	}
	if r.Format < 1 {
		return nil, base.CorruptionErrorf(reg.object, 0, "registry format %d (formats start at 1)", r.Format)
	}
	if reg.name != "" && r.Format < registryFormat {
		// Named registries began with format 2.
		return nil, base.CorruptionErrorf(reg.object, 0, "registry format %d in a named registry", r.Format)
	}
	if r.Objects == nil {
		r.Objects = map[string]*regObject{}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// check verifies the registry's invariants.
func (r *registry) check() error {
	refs := map[pieceRef]int{}
	for i, c := range r.Checkpoints {
		if c.ID >= r.NextID || (i > 0 && c.ID <= r.Checkpoints[i-1].ID) {
			return base.CorruptionErrorf(r.object, -1, "checkpoint ids out of order at %d (next id %d)", c.ID, r.NextID)
		}
		if m := c.Manifest; m != nil && (m.ID != c.ID || len(m.Files) != len(c.Pieces)) {
			return base.CorruptionErrorf(r.object, -1, "checkpoint %d: its manifest is of checkpoint %d with %d files, for %d pieces", c.ID, m.ID, len(m.Files), len(c.Pieces))
		}
		if c.Manifest == nil && c.ManifestSize <= 0 {
			// (A format-2 registry may still hold checkpoints of format 1,
			// whose manifests are objects, until they are dropped.)
			return base.CorruptionErrorf(r.object, -1, "checkpoint %d has no manifest", c.ID)
		}
		for _, p := range c.Pieces {
			refs[p]++
		}
	}
	for name, o := range r.Objects {
		var end int64
		live := false
		for _, p := range o.Pieces {
			if p.Offset < end || p.Size < 0 {
				return base.CorruptionErrorf(r.object, -1, "object %s: pieces overlap or out of order at offset %d", name, p.Offset)
			}
			end = p.Offset + p.Size
			if refs[pieceRef{name, p.Offset}] != p.Refs {
				return base.CorruptionErrorf(r.object, -1, "object %s offset %d: %d references recorded, %d retained checkpoints use it",
					name, p.Offset, p.Refs, refs[pieceRef{name, p.Offset}])
			}
			delete(refs, pieceRef{name, p.Offset})
			live = live || p.Refs > 0
		}
		if end > o.Size {
			return base.CorruptionErrorf(r.object, -1, "object %s: pieces end at %d, past its %d bytes", name, end, o.Size)
		}
		if !live {
			return base.CorruptionErrorf(r.object, -1, "object %s: no retained checkpoint uses it", name)
		}
	}
	for p := range refs {
		return base.CorruptionErrorf(r.object, -1, "a checkpoint uses %s offset %d, which the registry does not hold", p.Object, p.Offset)
	}
	return nil
}

// piece returns the piece of object name at off, or nil.
func (r *registry) piece(ref pieceRef) *regPiece {
	o := r.Objects[ref.Object]
	if o == nil {
		return nil
	}
	i := sort.Search(len(o.Pieces), func(i int) bool { return o.Pieces[i].Offset >= ref.Offset })
	if i < len(o.Pieces) && o.Pieces[i].Offset == ref.Offset {
		return &o.Pieces[i]
	}
	return nil
}

// clone returns a deep copy, for building the next registry without
// touching the current one.
func (r *registry) clone() *registry {
	c := &registry{Format: r.Format, NextID: r.NextID, Objects: make(map[string]*regObject, len(r.Objects)), object: r.object}
	for _, ck := range r.Checkpoints {
		ck.Pieces = append([]pieceRef(nil), ck.Pieces...)
		c.Checkpoints = append(c.Checkpoints, ck)
	}
	for name, o := range r.Objects {
		oc := *o
		oc.Pieces = append([]regPiece(nil), o.Pieces...)
		c.Objects[name] = &oc
	}
	return c
}

// ReadManifest reads checkpoint id's manifest from s, with each file's
// handle (object, offset) where the registry says the file is now: an
// upload that empties a sparse segment moves its pieces and points every
// retained checkpoint at their new place, so a manifest's own handles are
// where its files were when it was written.
func ReadManifest(ctx context.Context, s Store, id uint64) (*Manifest, error) {
	r, _, err := loadRegistry(ctx, s)
	if err != nil {
		return nil, err
	}
	return r.manifest(ctx, s, id)
}

// readManifestUnmarked is ReadManifest, and also returns the data objects
// (not External) of the manifest that may lack the registry's marker
// (regObject.Marked): all of them in a store that retains the checkpoint
// no more.
func readManifestUnmarked(ctx context.Context, s Store, id uint64) (*Manifest, []string, error) {
	r, _, err := loadRegistry(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	m, err := r.manifest(ctx, s, id)
	if err != nil {
		return nil, nil, err
	}
	var unmarked []string
	for _, f := range m.Files {
		if f.External || slices.Contains(unmarked, f.Object) {
			continue
		}
		if o := r.Objects[f.Object]; o == nil || !o.Marked {
			unmarked = append(unmarked, f.Object)
		}
	}
	return m, unmarked, nil
}

// manifest is ReadManifest with the registry r.
func (r *registry) manifest(ctx context.Context, s Store, id uint64) (*Manifest, error) {
	i, found := slices.BinarySearchFunc(r.Checkpoints, id, func(c regCheckpoint, id uint64) int { return cmp.Compare(c.ID, id) })
	if !found {
		// Not retained: only a format-1 store may still hold its
		// manifest (being dropped), whose handles are all there is; a
		// named registry was never of format 1.
		if r.object != registryName {
			return nil, fmt.Errorf("%w: registry %s retains no checkpoint %d", ErrNotExist, r.object, id)
		}
		m, err := readManifest(ctx, s, id)
		if errors.Is(err, ErrNotExist) {
			return nil, fmt.Errorf("%w: the store retains no checkpoint %d", ErrNotExist, id)
		}
		return m, err
	}
	ck := r.Checkpoints[i]
	var m *Manifest
	var err error
	if ck.Manifest != nil {
		c := *ck.Manifest
		c.Files = slices.Clone(c.Files)
		m = &c
	} else if m, err = readManifest(ctx, s, id); err != nil {
		return nil, err
	}
	if len(ck.Pieces) != len(m.Files) {
		return nil, base.CorruptionErrorf(r.object, -1, "checkpoint %d: the registry holds %d pieces, its manifest %d files", id, len(ck.Pieces), len(m.Files))
	}
	for j := range m.Files {
		f, ref := &m.Files[j], ck.Pieces[j]
		p := r.piece(ref)
		// Not by name: a database that references a file of another
		// (opened from a key range by reference) names it its own way,
		// and may name one piece twice (virtual tables of one table).
		if p == nil || p.Size != f.Size || p.Checksum != f.Checksum {
			return nil, base.CorruptionErrorf(r.object, -1, "checkpoint %d: the registry's piece %s offset %d is not its file %s", id, ref.Object, ref.Offset, f.Name)
		}
		f.Object, f.Offset = ref.Object, ref.Offset
	}
	return m, nil
}

// readManifest reads checkpoint id's manifest as it was written.
func readManifest(ctx context.Context, s Store, id uint64) (*Manifest, error) {
	name := manifestName(id)
	b, err := getAll(ctx, s, name)
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	if err := unseal(name, b, m); err != nil {
		return nil, err
	}
	if m.ID != id {
		return nil, base.CorruptionErrorf(name, 0, "manifest of checkpoint %d found under id %d", m.ID, id)
	}
	return m, nil
}

// Checkpoints returns the ids of the checkpoints the store retains, oldest
// first.
func Checkpoints(ctx context.Context, s Store) ([]uint64, error) {
	r, _, err := loadRegistry(ctx, s)
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, len(r.Checkpoints))
	for i, c := range r.Checkpoints {
		ids[i] = c.ID
	}
	return ids, nil
}

// ObjectStatus describes a data object of a store: its size, whether it
// is a segment, how many files it holds pieces of, and how many of its
// bytes the retained checkpoints use.
type ObjectStatus struct {
	Name      string
	Size      int64
	Segment   bool
	Pieces    int
	LiveBytes int64
	// LiveRatio is LiveBytes / Size; a segment below
	// UploadOptions.MinLiveRatio has its live pieces re-uploaded by the
	// next checkpoint.
	LiveRatio float64
}

// Objects returns the status of every data object the store's registry
// holds, by name.
func Objects(ctx context.Context, s Store) ([]ObjectStatus, error) {
	r, _, err := loadRegistry(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]ObjectStatus, 0, len(r.Objects))
	for name, o := range r.Objects {
		st := ObjectStatus{Name: name, Size: o.Size, Segment: o.Segment, Pieces: len(o.Pieces)}
		for _, p := range o.Pieces {
			if p.Refs > 0 {
				st.LiveBytes += p.Size
			}
		}
		if o.Size > 0 {
			st.LiveRatio = float64(st.LiveBytes) / float64(o.Size)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
