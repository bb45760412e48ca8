package checkpoint

// This file owns the audit of a store (strata check --store): every object
// a retained checkpoint or a given database's manifest refers to is there
// whole, and the reference markers (package remote) are where the rules
// put them. It reads the registry, one listing of the store and, unless
// Quick, the bytes of the pieces the retained checkpoints use; with Fix it
// makes only the repairs that are safe beside holders at work.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/remote"
)

// AuditOptions configure Audit. The zero value checks everything, reading
// every piece a retained checkpoint uses, and repairs nothing.
type AuditOptions struct {
	// Quick checks that the objects exist with the sizes the registry and
	// the manifests say, without reading them: no checksums.
	Quick bool
	// Instances are databases that share files in the store, as their
	// manifests record them (remote.ReadInstance reads one from its
	// directory): each shared file's object must hold its range and carry
	// the instance's marker, and the instance's markers on objects its
	// manifest does not name are stray.
	Instances []*remote.Instance
	// AllInstances says that Instances are every database that uses the
	// store: the markers and holds of any other instance are stray (what
	// an instance gone without its Destroy left, or an OpenFromStore a
	// crash stopped that was never tried again) instead of notes.
	AllInstances bool
	// PartialUploadAge is how old a partial upload (PartialUploads: on
	// S3, a multipart upload) must be to count as abandoned, reported
	// with the unreferenced objects and aborted by Fix; a younger one may
	// be in flight, and is a note. 0: an hour.
	PartialUploadAge time.Duration
	// Fix makes the repairs that are safe while databases and uploads
	// work on the store: it deletes the unreferenced objects (each after
	// a last look at its markers, as remote.Sweep does) and writes the
	// markers missing from existing objects the registry or a given
	// manifest names. Stray markers are left to their holders, which
	// alone know whether a request of theirs is in flight (see
	// AuditReport.Strays).
	Fix bool
}

// Finding is one thing an audit found, about one object or marker.
type Finding struct {
	// Object is the object concerned (for a marker, the object it holds).
	Object string
	// Holder, if set, makes the finding about Holder's marker on Object.
	Holder string
	What   string
	// fix is the repair Fix makes, if any; it reports whether it made
	// it (an object a holder marked since is left alone).
	fix func(ctx context.Context, s Store) (bool, error)
}

func (f Finding) String() string {
	if f.Holder != "" {
		return remote.MarkerName(f.Object, f.Holder) + ": " + f.What
	}
	return f.Object + ": " + f.What
}

// AuditReport is what Audit found.
type AuditReport struct {
	// Checkpoints are the ids of the checkpoints the store's default
	// registry retains; Named those of each named registry (see Named),
	// by name.
	Checkpoints []uint64
	Named       map[string][]uint64
	// DataObjects and ExternalObjects count the objects the registries
	// hold: their own data objects, and shared files' objects they
	// reference (an object two registries hold counts twice).
	DataObjects, ExternalObjects int
	// Pieces and PieceBytes: the pieces the retained checkpoints use.
	Pieces     int
	PieceBytes int64
	// VerifiedPieces and VerifiedBytes: the pieces read and checked
	// against their XXH64 (none with Quick; external pieces have none:
	// their files' own checksums verify them when a database reads them).
	VerifiedPieces int
	VerifiedBytes  int64
	// Objects counts the store's objects, markers apart; Markers the
	// markers; Instances the databases checked.
	Objects, Markers, Instances int
	// Holds are the holds (package remote) of instances opened from a
	// checkpoint that have not turned them into markers yet; each counts
	// as its holder's markers on the objects it names.
	Holds int

	// Problems are damage, or states the rules never leave: an object a
	// retained checkpoint or a given manifest refers to that is missing,
	// short or does not match its checksum, or that lacks the marker of
	// a holder that uses it (its other holders could delete it).
	Problems []Finding
	// Strays are markers no holder's state explains: on a missing
	// object, or of a holder (the registry, a given database) that does
	// not name the object. A crash between a marker and the request
	// that follows it leaves one, as does such a request in flight; the
	// holder drops its own (an instance at its next Open, the registry
	// in its next upload's sweep).
	Strays []Finding
	// Unreferenced are objects under shared/, data/ or checkpoints/ that
	// no marker holds and no registry or given manifest names: what a
	// crash between a holder's last marker going and its object's
	// deletion leaves, or a failed upload (remote.Sweep and the next
	// upload delete them; so does Fix); and partial uploads a crash
	// abandoned (see AuditOptions.PartialUploadAge; Fix aborts them).
	Unreferenced []Finding
	// Notes are states that need no repair: objects written before
	// markers existed, markers of instances whose databases were not
	// given, objects that are none of the store's.
	Notes []Finding
	// Fixed are the findings Fix repaired (taken out of the lists
	// above).
	Fixed []Finding
}

// OK reports whether the store is clean: no problem, no stray marker, no
// unreferenced object.
func (r *AuditReport) OK() bool {
	return len(r.Problems) == 0 && len(r.Strays) == 0 && len(r.Unreferenced) == 0
}

// auditAttempts bounds how often Audit starts again because an upload
// committed while it ran (its findings would mix two states of a
// registry).
const auditAttempts = 3

// Audit checks store s (see AuditReport for what it reports), with every
// registry in it (the default one and the named ones, whichever registry
// s means):
//
//   - each registry loads, its invariants hold, and each retained
//     checkpoint's manifest agrees with its pieces and decodes;
//   - every object the registry holds exists: its own data objects with
//     exactly their recorded size and, unless Quick, every piece a
//     retained checkpoint uses with its XXH64; shared files' objects
//     (external) with at least their pieces' bytes;
//   - every object a registry holds carries the registry's marker (one
//     of the default registry's own written before markers existed and
//     held by no one else may lack it: a note);
//   - for each given instance, every shared file's object holds the
//     file's range and carries the instance's marker;
//   - every marker is on an object that exists and that its holder's
//     state names, as far as the audit knows that state (the registry's,
//     given instances'): the others are stray;
//   - objects under shared/, data/ and checkpoints/ that nothing holds
//     or names are unreferenced.
//
// It reads the registries, lists the whole store once and reads the
// pieces' bytes; if a registry changed meanwhile (an upload committed),
// it starts again. It fails only when a request fails: damage is in the
// report. On a store in use, strays and unreferenced objects may be work
// in flight; an audit of a quiet store reports only what crashes left.
func Audit(ctx context.Context, s Store, opts *AuditOptions) (*AuditReport, error) {
	var o AuditOptions
	if opts != nil {
		o = *opts
	}
	for attempt := 1; ; attempt++ {
		a := &auditor{ctx: ctx, s: s, o: o, rep: &AuditReport{}}
		before, err := a.run()
		if err != nil {
			return nil, err
		}
		after, err := readRegistries(ctx, s)
		if err != nil {
			return nil, err
		}
		if !maps.EqualFunc(before, after, bytes.Equal) {
			if attempt < auditAttempts {
				continue
			}
			a.notef("registry", "a registry changed during each of %d attempts (uploads are committing): what is reported may be their work in flight, and nothing was fixed", attempt)
			return a.rep, nil
		}
		if o.Fix {
			if err := a.fix(); err != nil {
				return a.rep, err
			}
		}
		return a.rep, nil
	}
}

// readRegistries returns the bytes of the store's registries, by name
// ("" for the default one); a registry that does not exist is left out.
func readRegistries(ctx context.Context, s Store) (map[string][]byte, error) {
	out := map[string][]byte{}
	list, err := s.List(ctx, namedRegistryPrefix)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: audit: list the registries: %w", err)
	}
	ids := []registryID{defaultRegistry}
	for _, o := range list {
		name := strings.TrimPrefix(o.Name, namedRegistryPrefix)
		if remote.CheckRegistryName(name) == nil {
			ids = append(ids, namedRegistry(name))
		}
	}
	for _, id := range ids {
		b, err := getAll(ctx, s, id.object)
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: audit: %w", err)
		}
		out[id.name] = b
	}
	return out, nil
}

// auditReg is a registry an audit checks.
type auditReg struct {
	id registryID
	// reg is nil if the registry could not be decoded (then nothing is
	// known of what it holds).
	reg *registry
}

// auditor is one pass of Audit.
type auditor struct {
	ctx context.Context
	s   Store
	o   AuditOptions
	rep *AuditReport

	// regs are the store's registries, the default one first.
	regs []*auditReg
	// objects are the store's objects and their sizes, markers apart;
	// marked the holders of each marked object.
	objects map[string]int64
	marked  map[string][]string
	// named says, for each object, the holders whose state names it.
	named map[string]map[string]bool
	// given are the holders whose whole state the audit knows.
	given map[string]bool
}

func (a *auditor) problemf(object, format string, args ...any) *Finding {
	a.rep.Problems = append(a.rep.Problems, Finding{Object: object, What: fmt.Sprintf(format, args...)})
	return &a.rep.Problems[len(a.rep.Problems)-1]
}

func (a *auditor) notef(object, format string, args ...any) *Finding {
	a.rep.Notes = append(a.rep.Notes, Finding{Object: object, What: fmt.Sprintf(format, args...)})
	return &a.rep.Notes[len(a.rep.Notes)-1]
}

func (a *auditor) name(object, holder string) {
	if a.named[object] == nil {
		a.named[object] = map[string]bool{}
	}
	a.named[object][holder] = true
}

// addRef is the repair of a marker missing from an object its holder
// names: writing it can only keep the object longer.
func addRef(object, holder string) func(context.Context, Store) (bool, error) {
	return func(ctx context.Context, s Store) (bool, error) { return true, remote.AddRef(ctx, s, object, holder) }
}

// run makes one pass and returns the registries' bytes it audited.
func (a *auditor) run() (map[string][]byte, error) {
	rbs, err := readRegistries(a.ctx, a.s)
	if err != nil {
		return nil, err
	}
	a.given = map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(rbs)) {
		id := defaultRegistry
		if name != "" {
			id = namedRegistry(name)
		}
		r := &auditReg{id: id}
		if r.reg, err = decodeRegistry(id, rbs[name]); err != nil {
			r.reg = nil
			a.problemf(id.object, "%v", err)
		} else {
			a.given[id.holder] = true
		}
		a.regs = append(a.regs, r)
	}
	if _, ok := rbs[""]; !ok {
		// No default registry: one with no checkpoint.
		a.regs = append([]*auditReg{{id: defaultRegistry, reg: emptyRegistry(defaultRegistry)}}, a.regs...)
		a.given[remote.RegistryHolder] = true
	}
	if pu, ok := unnamed(a.s).(PartialUploads); ok {
		if err := a.checkPartialUploads(pu); err != nil {
			return nil, err
		}
	}
	list, err := a.s.List(a.ctx, "")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: audit: list the store: %w", err)
	}
	a.objects, a.marked, a.named = map[string]int64{}, map[string][]string{}, map[string]map[string]bool{}
	for _, o := range list {
		if object, holder, ok := remote.ParseMarker(o.Name); ok {
			a.marked[object] = append(a.marked[object], holder)
			a.rep.Markers++
			continue
		}
		if holder, ok := remote.ParseHoldName(o.Name); ok {
			if err := a.readHold(holder); err != nil {
				return nil, err
			}
			continue
		}
		a.objects[o.Name] = o.Size
	}
	a.rep.Objects = len(a.objects)
	for _, r := range a.regs {
		if r.reg != nil {
			if err := a.checkRegistry(r); err != nil {
				return nil, err
			}
		}
	}
	// A named registry's marker whose registry does not exist (a crash
	// before its first commit): a registry with no checkpoint names
	// nothing.
	for _, holders := range a.marked {
		for _, h := range holders {
			if name, ok := remote.HolderRegistry(h); ok && name != "" && !a.hasRegistry(name) {
				a.given[h] = true
			}
		}
	}
	a.checkInstances()
	a.checkMarkers()
	a.checkUnreferenced()
	return rbs, nil
}

// hasRegistry reports whether the registry called name exists.
func (a *auditor) hasRegistry(name string) bool {
	return slices.ContainsFunc(a.regs, func(r *auditReg) bool { return r.id.name == name })
}

// readHold counts holder's hold (package remote) as holder's markers on
// the objects it names. One that does not decode is a problem (deletions
// fail while it is there, keeping every object); one deleted since the
// List (converted into markers) is read as none.
func (a *auditor) readHold(holder string) error {
	objects, found, err := remote.ReadHold(a.ctx, a.s, holder)
	switch {
	case errors.Is(err, base.ErrCorruption):
		a.problemf(remote.HoldName(holder), "%v; deletions fail while it is there", err)
		return nil
	case err != nil:
		return fmt.Errorf("checkpoint: audit: %w", err)
	case !found:
		return nil
	}
	a.rep.Holds++
	for _, object := range objects {
		if !slices.Contains(a.marked[object], holder) {
			a.marked[object] = append(a.marked[object], holder)
		}
	}
	return nil
}

// checkRegistry checks the retained checkpoints of ar and the objects it
// holds.
func (a *auditor) checkRegistry(ar *auditReg) error {
	r, holder := ar.reg, ar.id.holder
	uses := map[pieceRef][]uint64{}
	for _, c := range r.Checkpoints {
		if ar.id.name == "" {
			a.rep.Checkpoints = append(a.rep.Checkpoints, c.ID)
		} else {
			if a.rep.Named == nil {
				a.rep.Named = map[string][]uint64{}
			}
			a.rep.Named[ar.id.name] = append(a.rep.Named[ar.id.name], c.ID)
		}
		for _, p := range c.Pieces {
			uses[p] = append(uses[p], c.ID)
		}
		a.checkManifest(ar, c)
	}
	var verify []string
	for _, name := range slices.Sorted(maps.Keys(r.Objects)) {
		o := r.Objects[name]
		a.name(name, holder)
		if o.External {
			a.rep.ExternalObjects++
		} else {
			a.rep.DataObjects++
		}
		for _, p := range o.Pieces {
			if p.Refs > 0 {
				a.rep.Pieces++
				a.rep.PieceBytes += p.Size
			}
		}
		size, ok := a.objects[name]
		switch {
		case !ok:
			a.problemf(name, "missing; %s", usesText(name, o, uses))
			continue
		case o.External && size < o.Size:
			a.problemf(name, "%d bytes, but its pieces end at %d; %s", size, o.Size, usesText(name, o, uses))
		case !o.External && size != o.Size:
			a.problemf(name, "%d bytes, the registry says %d; %s", size, o.Size, usesText(name, o, uses))
		case !o.External && !a.o.Quick:
			verify = append(verify, name)
		}
		holders := a.marked[name]
		if slices.Contains(holders, holder) {
			continue
		}
		switch {
		case o.External:
			a.problemf(name, "a shared file's object %s references has no marker of %[1]s: its database's release of the file would delete it; %s", ar.id.what(), usesText(name, o, uses)).fix = addRef(name, holder)
		case len(holders) > 0:
			a.problemf(name, "no marker of %s, which uses it, while %s holds it too: the release of that holder's last marker would delete it; %s", ar.id.what(), strings.Join(holders, ", "), usesText(name, o, uses)).fix = addRef(name, holder)
		case ar.id.name != "":
			a.problemf(name, "no marker of %s, which uses it: a sweep would delete it; %s", ar.id.what(), usesText(name, o, uses)).fix = addRef(name, holder)
		default:
			a.notef(name, "no marker of the registry (written before markers existed); nothing else holds it").fix = addRef(name, holder)
		}
	}
	return a.verify(r, verify, uses)
}

// checkManifest checks that retained checkpoint c's manifest is there,
// agrees with the pieces the registry gives it, and decodes.
func (a *auditor) checkManifest(ar *auditReg, c regCheckpoint) {
	m := c.Manifest
	reg := ar.id.object
	if m == nil { // format 1: an object of its own
		name := manifestName(c.ID)
		a.name(name, ar.id.holder)
		size, ok := a.objects[name]
		switch {
		case !ok:
			a.problemf(name, "missing: the manifest of retained checkpoint %d", c.ID)
			return
		case size != c.ManifestSize:
			a.problemf(name, "%d bytes, the registry says %d: the manifest of retained checkpoint %d", size, c.ManifestSize, c.ID)
			return
		case a.o.Quick:
			return
		}
		var err error
		if m, err = readManifest(a.ctx, a.s, c.ID); err != nil {
			a.problemf(name, "the manifest of retained checkpoint %d: %v", c.ID, err)
			return
		}
	}
	if len(m.Files) != len(c.Pieces) {
		a.problemf(reg, "checkpoint %d: %d files in its manifest, %d pieces", c.ID, len(m.Files), len(c.Pieces))
		return
	}
	for j, f := range m.Files {
		ref := c.Pieces[j]
		if p := ar.reg.piece(ref); p == nil || p.Size != f.Size || p.Checksum != f.Checksum { // not by name: see registry.manifest
			a.problemf(reg, "checkpoint %d: its file %s (%d bytes) is not the piece at offset %d of %s", c.ID, f.Name, f.Size, ref.Offset, ref.Object)
		}
	}
	v, err := decodeDBManifest(m)
	if err != nil {
		a.problemf(reg, "checkpoint %d: %v", c.ID, err)
		return
	}
	want := versionFileNames(v)
	got := make([]string, len(m.Files))
	for i, f := range m.Files {
		got[i] = f.Name
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		a.problemf(reg, "checkpoint %d: its database manifest lists %d tables and value logs, its files are %d others", c.ID, len(want), len(got))
	}
}

// usesText says which retained checkpoints use which files of object o.
func usesText(name string, o *regObject, uses map[pieceRef][]uint64) string {
	const maxFiles = 4
	var parts []string
	ids := map[uint64]bool{}
	n := 0
	for _, p := range o.Pieces {
		ck := uses[pieceRef{name, p.Offset}]
		if len(ck) == 0 {
			continue
		}
		for _, id := range ck {
			ids[id] = true
		}
		if n++; n <= maxFiles {
			parts = append(parts, fmt.Sprintf("%s at offset %d (%d bytes)", p.File, p.Offset, p.Size))
		}
	}
	if n > maxFiles {
		parts = append(parts, fmt.Sprintf("%d more", n-maxFiles))
	}
	if len(ids) == 1 {
		return fmt.Sprintf("retained checkpoint %s uses %s", idsText(slices.Sorted(maps.Keys(ids))), strings.Join(parts, ", "))
	}
	return fmt.Sprintf("retained checkpoints %s use %s", idsText(slices.Sorted(maps.Keys(ids))), strings.Join(parts, ", "))
}

func idsText(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// verify reads the pieces retained checkpoints use of each named data
// object (one ranged GET an object, from its first such piece to the end
// of its last) and checks their XXH64, a few objects at a time.
func (a *auditor) verify(r *registry, names []string, uses map[pieceRef][]uint64) error {
	var mu sync.Mutex
	return runParallel(a.ctx, 4, len(names), func(ctx context.Context, i int) error {
		name := names[i]
		o := r.Objects[name]
		var live []regPiece
		for _, p := range o.Pieces {
			if p.Refs > 0 {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return nil
		}
		start, end := live[0].Offset, live[len(live)-1].Offset+live[len(live)-1].Size
		rc, err := a.s.Get(ctx, name, start, end-start)
		if errors.Is(err, ErrNotExist) {
			mu.Lock()
			a.problemf(name, "deleted during the audit; %s", usesText(name, o, uses))
			mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint: audit: read %s: %w", name, err)
		}
		defer rc.Close()
		pos := start
		for _, p := range live {
			if _, err := io.CopyN(io.Discard, rc, p.Offset-pos); err != nil {
				return fmt.Errorf("checkpoint: audit: read %s: %w", name, err)
			}
			h := xxhash.New()
			if _, err := io.CopyN(h, rc, p.Size); err != nil {
				return fmt.Errorf("checkpoint: audit: read %s at offset %d: %w", name, p.Offset, err)
			}
			pos = p.Offset + p.Size
			mu.Lock()
			a.rep.VerifiedPieces++
			a.rep.VerifiedBytes += p.Size
			if got := h.Sum64(); got != p.Checksum {
				a.problemf(name, "offset %d: %s (%d bytes) has XXH64 %016x, the registry says %016x; used by retained checkpoints %s",
					p.Offset, p.File, p.Size, got, p.Checksum, idsText(uses[pieceRef{name, p.Offset}]))
			}
			mu.Unlock()
		}
		return nil
	})
}

// checkInstances checks each given instance's shared files against the
// store.
func (a *auditor) checkInstances() {
	seen := map[string]string{}
	for _, in := range a.o.Instances {
		a.rep.Instances++
		if in.ID == "" {
			if len(in.Files) > 0 {
				a.problemf(in.Dir, "the manifest records %d shared files but no instance id", len(in.Files))
			} else {
				a.notef(in.Dir, "the database has shared no file (no instance id)")
			}
			continue
		}
		if other, ok := seen[in.ID]; ok {
			a.problemf(in.Dir, "instance %s is also the instance of %s: two databases write the same objects and drop each other's markers", in.ID, other)
			continue
		}
		seen[in.ID] = in.Dir
		holder := in.Holder()
		a.given[holder] = true
		for _, f := range in.Files {
			obj := f.Ref.Object
			a.name(obj, holder)
			size, ok := a.objects[obj]
			end := int64(f.Ref.Offset) + f.Size
			switch {
			case !ok:
				a.problemf(obj, "missing; the database %s (instance %s) reads %s from it (offset %d, %d bytes)", in.Dir, in.ID, f.Name, f.Ref.Offset, f.Size)
				continue
			case size < end:
				a.problemf(obj, "%d bytes, but the database %s (instance %s) reads %s from it up to offset %d", size, in.Dir, in.ID, f.Name, end)
			}
			if !slices.Contains(a.marked[obj], holder) {
				a.problemf(obj, "no marker of instance %s, whose database %s reads %s from it: its other holders could delete it", in.ID, in.Dir, f.Name).fix = addRef(obj, holder)
			}
		}
	}
}

// checkMarkers finds the stray markers, and notes those of holders whose
// state the audit does not know.
func (a *auditor) checkMarkers() {
	others := map[string]int{} // instance holders not given: their markers on existing objects
	for _, object := range slices.Sorted(maps.Keys(a.marked)) {
		_, exists := a.objects[object]
		holders := slices.Clone(a.marked[object])
		slices.Sort(holders)
		for _, h := range holders {
			named := a.named[object]
			switch {
			case named[h]:
				// Explained.
			case !exists && len(named) > 0:
				// A missing object someone names: reported as such.
			case !exists:
				a.rep.Strays = append(a.rep.Strays, Finding{Object: object, Holder: h,
					What: "on a missing object (a crash between the marker and the object's Put, or a Put in flight); " + dropper(h)})
			case a.given[h]:
				a.rep.Strays = append(a.rep.Strays, Finding{Object: object, Holder: h,
					What: "its holder's state does not name the object (a crash between the marker and the edit that would name it, or one in flight); " + dropper(h)})
			case isRegistryHolder(h):
				// The registry could not be read: nothing is known.
			default:
				if _, ok := remote.HolderInstance(h); ok {
					others[h]++
				} else {
					a.rep.Notes = append(a.rep.Notes, Finding{Object: object, Holder: h, What: "a holder that is neither the registry nor an instance"})
				}
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(others)) {
		id, _ := remote.HolderInstance(h)
		if a.o.AllInstances {
			a.rep.Strays = append(a.rep.Strays, Finding{Object: h,
				What: fmt.Sprintf("holds %d objects, and instance %s is none of the databases given as all there are (one gone without Destroy, or an OpenFromStore a crash stopped): Destroy its directory, or drop it with remote.DropInstance", others[h], id)})
			continue
		}
		a.notef(h, "holds %d objects; no database of instance %s was given (one elsewhere, or what an interrupted OpenFromStore left)", others[h], id)
	}
}

// checkPartialUploads reports the store's partial uploads: abandoned
// (older than PartialUploadAge) with the unreferenced objects, for Fix
// to abort; younger ones as notes.
func (a *auditor) checkPartialUploads(pu PartialUploads) error {
	ups, err := pu.ListPartialUploads(a.ctx, "")
	if err != nil {
		return fmt.Errorf("checkpoint: audit: %w", err)
	}
	age := a.o.PartialUploadAge
	if age <= 0 {
		age = time.Hour
	}
	for _, u := range ups {
		begun := u.Initiated.UTC().Format(time.RFC3339)
		if time.Since(u.Initiated) < age {
			a.notef(u.Name, "a partial upload (%s) begun at %s, perhaps in flight", u.ID, begun)
			continue
		}
		a.rep.Unreferenced = append(a.rep.Unreferenced, Finding{Object: u.Name,
			What: fmt.Sprintf("a partial upload (%s) begun at %s and abandoned (a crash during an upload): the store keeps it until it is aborted", u.ID, begun),
			fix:  func(ctx context.Context, _ Store) (bool, error) { return true, pu.AbortPartialUpload(ctx, u) }})
	}
	return nil
}

// dropper says who drops holder h's stray markers.
func dropper(h string) string {
	if isRegistryHolder(h) {
		return "the next upload's sweep drops it"
	}
	return "the instance drops it at its next Open"
}

// checkUnreferenced lists the objects nothing holds or names.
func (a *auditor) checkUnreferenced() {
	for _, name := range slices.Sorted(maps.Keys(a.objects)) {
		if name == registryName || strings.HasPrefix(name, namedRegistryPrefix) || len(a.marked[name]) > 0 || len(a.named[name]) > 0 {
			continue
		}
		switch {
		case remote.IsShared(name):
		case strings.HasPrefix(name, dataPrefix) || strings.HasPrefix(name, manifestPrefix):
			if a.unreadable(name) {
				continue // whether its registry names it is not known
			}
		default:
			a.notef(name, "not an object this store's formats name (%d bytes)", a.objects[name])
			continue
		}
		a.rep.Unreferenced = append(a.rep.Unreferenced, Finding{Object: name,
			What: fmt.Sprintf("%d bytes that no marker holds and no registry or given manifest names", a.objects[name]),
			fix:  func(ctx context.Context, s Store) (bool, error) { return remote.DeleteUnheld(ctx, s, name) }})
	}
}

// unreadable reports whether the registry that would name the data or
// manifest object name (data/<name>/... is the named registry's) could
// not be decoded.
func (a *auditor) unreadable(name string) bool {
	owner := ""
	if rest, ok := strings.CutPrefix(name, dataPrefix); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			owner = rest[:i]
		}
	}
	for _, r := range a.regs {
		if r.id.name == owner {
			return r.reg == nil
		}
	}
	return false // no such registry: it names nothing
}

// isRegistryHolder reports whether h is a registry's holder name.
func isRegistryHolder(h string) bool {
	_, ok := remote.HolderRegistry(h)
	return ok
}

// fix makes the repairs of the findings that have one and moves them to
// Fixed. After a failed repair it stops, leaving the rest where they are.
func (a *auditor) fix() error {
	var (
		held     []Finding
		firstErr error
	)
	for _, list := range []*[]Finding{&a.rep.Problems, &a.rep.Unreferenced, &a.rep.Notes} {
		var kept []Finding
		for _, f := range *list {
			if f.fix == nil || firstErr != nil {
				kept = append(kept, f)
				continue
			}
			done, err := f.fix(a.ctx, a.s)
			switch {
			case err != nil:
				firstErr = fmt.Errorf("checkpoint: audit: fix %s: %w", f.Object, err)
				kept = append(kept, f)
			case !done:
				held = append(held, Finding{Object: f.Object, What: "a holder marked it during the audit: left alone"})
			default:
				a.rep.Fixed = append(a.rep.Fixed, f)
			}
		}
		*list = kept
	}
	a.rep.Notes = append(a.rep.Notes, held...)
	slices.SortFunc(a.rep.Fixed, func(x, y Finding) int { return cmp.Compare(x.Object, y.Object) })
	return firstErr
}
