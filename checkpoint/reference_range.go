package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/remote"
	"github.com/strata-db/strata/vfs"
)

// StoreCheckpoint names a checkpoint: its id in the registry of Store (a
// store, or a view of one with a registry of its own, Named).
type StoreCheckpoint struct {
	Store Store
	ID    uint64
}

// ReferenceRange writes into dst on fs (which must not exist or be an
// empty directory) a database whose state is the union of the checkpoints
// srcs, all of one store (their registries may differ), restricted to the user keys in [start, end) (nil: no bound),
// by reference, as Reference does for one checkpoint: nothing is
// downloaded or copied. It is how a rescaled instance takes its key range
// from the old instances' checkpoints (2 -> 3 splits them, 3 -> 2 unions
// them).
//
// The tables that overlap the range are referenced under file numbers of
// the new database; one that straddles a bound is kept virtual, with the
// bound as its visible range (manifest.FileMetadata.Virtual), which
// compactions later rewrite into tables of the range alone. The value
// logs those tables reference keep their numbers, which their value
// pointers name. The checkpoints may not overlap in the range: the key
// spans of their clipped tables must be disjoint, as those of instances
// that each held their own part of the key space are (an error says which
// two overlap). Their value logs are shared by number: two checkpoints
// with a value log of one number must have it in the same object (one
// instance's file both reference), else they are refused. Databases that
// share files allocate numbers apart (remote.NewFileNumBase), so this
// holds for checkpoints of instances that had Options.SharedStore from
// their first write; a checkpoint of a database that was never shared
// collides with another's, and such a range is restored by copying
// (strata.RestoreRangeFromStore, IngestRange).
//
// The instance holds every object it references by one hold, checked
// against each checkpoint's registry entry as Reference does. On failure
// the hold is dropped and dst is as it was.
func ReferenceRange(ctx context.Context, srcs []StoreCheckpoint, start, end []byte, fs vfs.FS, dst, instance string) (err error) {
	if fs == nil {
		fs = vfs.Default
	}
	if err := remote.CheckInstanceID(instance); err != nil {
		return err
	}
	switch {
	case len(srcs) == 0:
		return errors.New("checkpoint: reference a range: no checkpoint")
	case start != nil && end != nil && bytes.Compare(start, end) >= 0:
		return fmt.Errorf("checkpoint: reference a range: empty range [%q, %q)", start, end)
	}
	for i, src := range srcs {
		switch {
		case src.Store == nil:
			return errors.New("checkpoint: reference a range: a checkpoint without a store")
		case !SameStore(src.Store, srcs[0].Store):
			return fmt.Errorf("checkpoint: reference a range: checkpoints %s and %s are in different stores", srcs[0], src)
		case slices.ContainsFunc(srcs[:i], func(o StoreCheckpoint) bool {
			return o.ID == src.ID && RegistryName(o.Store) == RegistryName(src.Store)
		}):
			return fmt.Errorf("checkpoint: reference a range: checkpoint %s given twice", src)
		}
	}
	u, err := unionRange(ctx, srcs, start, end)
	if err != nil {
		return err
	}
	s := srcs[0].Store
	// As Reference: the registries' markers on objects that have none,
	// then the instance's hold.
	for i, src := range srcs {
		if _, err := remote.AddRefs(ctx, src.Store, u.unmarked[i], registryOf(src.Store).holder); err != nil {
			return err
		}
	}
	done, err := holdObjects(ctx, s, fs, dst, u.objects, instance)
	if err != nil {
		return err
	}
	defer func() { done(ctx, err) }()
	for i, m := range u.manifests {
		if err := stillRetained(ctx, srcs[i].Store, m); err != nil {
			return err
		}
	}
	u.edit.InstanceID = instance
	nv, err := manifest.Apply(nil, u.edit)
	if err != nil {
		return fmt.Errorf("checkpoint: reference a range: %w", err)
	}
	return writeInstance(fs, dst, nv, u.manifestNum, u.next, u.lastSeq)
}

// rangeUnion is the version ReferenceRange writes and what it holds.
type rangeUnion struct {
	edit      *manifest.VersionEdit
	manifests []*Manifest
	// objects are the objects the version's files are in; unmarked[i]
	// those of them the registry of source i holds without a marker.
	objects  []string
	unmarked [][]string
	// manifestNum, next (past every number of the version and of the
	// sources' allocations) and lastSeq for the new manifest.
	manifestNum, next base.FileNum
	lastSeq           base.SeqNum
}

// String names the checkpoint: its id, and its registry's name if not
// the default registry.
func (s StoreCheckpoint) String() string {
	if name := RegistryName(s.Store); name != "" {
		return fmt.Sprintf("%s/%d", name, s.ID)
	}
	return fmt.Sprint(s.ID)
}

// unionRange reads the checkpoints srcs and builds the version of their
// union restricted to [start, end) (see ReferenceRange).
func unionRange(ctx context.Context, srcs []StoreCheckpoint, start, end []byte) (*rangeUnion, error) {
	u := &rangeUnion{edit: &manifest.VersionEdit{FormatVersion: manifest.FormatVersion}}
	type table struct {
		level int
		f     *manifest.FileMetadata
		ref   manifest.SharedRef
	}
	type span struct {
		src    StoreCheckpoint
		lo, hi base.InternalKey
	}
	type vlogSource struct {
		src StoreCheckpoint
		ref manifest.SharedRef
	}
	var (
		tables []table
		spans  []span
		vlogs  = map[base.FileNum]vlogSource{}
	)
	u.unmarked = make([][]string, len(srcs))
	for i, src := range srcs {
		id := src.ID
		m, unmarked, err := readManifestUnmarked(ctx, src.Store, id)
		if err != nil {
			return nil, err
		}
		v, err := decodeDBManifest(m)
		if err != nil {
			return nil, err
		}
		u.manifests = append(u.manifests, m)
		if i == 0 {
			u.edit.MergerName = v.MergerName
		} else if v.MergerName != u.edit.MergerName {
			return nil, fmt.Errorf("checkpoint: reference a range: checkpoint %s is of merger %q, checkpoint %s of %q", srcs[0], u.edit.MergerName, src, v.MergerName)
		}
		u.manifestNum = max(u.manifestNum, m.ManifestNum)
		u.next = max(u.next, m.NextFileNum)
		u.lastSeq = max(u.lastSeq, m.LastSeq)
		refs := map[string]FileRef{}
		for _, f := range m.Files {
			if err := checkFileName(f.Name); err != nil {
				return nil, base.CorruptionErrorf(manifestName(id), -1, "%v", err)
			}
			refs[f.Name] = f
		}
		lookup := func(t base.FileType, num base.FileNum) (manifest.SharedRef, error) {
			name := base.MakeFilename(t, num)
			f, ok := refs[name]
			if !ok {
				return manifest.SharedRef{}, base.CorruptionErrorf(manifestName(id), -1, "the database's manifest lists %s, the checkpoint's files do not", name)
			}
			if !slices.Contains(u.objects, f.Object) {
				u.objects = append(u.objects, f.Object)
			}
			if slices.Contains(unmarked, f.Object) && !slices.Contains(u.unmarked[i], f.Object) {
				u.unmarked[i] = append(u.unmarked[i], f.Object)
			}
			return manifest.SharedRef{Object: f.Object, Offset: uint64(f.Offset)}, nil
		}
		needed := map[base.FileNum]bool{}
		allVlogs := false
		var sp *span
		var ferr error
		v.Files(func(level int, f *manifest.FileMetadata) {
			u.next = max(u.next, f.FileNum+1)
			c, ok := f.Clip(start, end)
			if !ok || ferr != nil {
				return
			}
			ref, err := lookup(base.FileTypeTable, f.FileNum)
			if err != nil {
				ferr = err
				return
			}
			tables = append(tables, table{level: level, f: c, ref: ref})
			if sp == nil {
				sp = &span{src: src, lo: c.Smallest, hi: c.Largest}
			} else {
				if base.Compare(c.Smallest.UserKey, sp.lo.UserKey) < 0 {
					sp.lo = c.Smallest
				}
				if endsAfter(c.Largest, sp.hi) {
					sp.hi = c.Largest
				}
			}
			if !c.VlogRefsKnown {
				allVlogs = true
			}
			for _, r := range c.VlogRefs {
				needed[r.FileNum] = true
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		if sp != nil {
			spans = append(spans, *sp)
		}
		for _, vm := range v.SortedVlogs() {
			u.next = max(u.next, vm.FileNum+1)
			if !allVlogs && !needed[vm.FileNum] {
				continue
			}
			ref, err := lookup(base.FileTypeVlog, vm.FileNum)
			if err != nil {
				return nil, err
			}
			if prev, ok := vlogs[vm.FileNum]; ok {
				if prev.ref != ref {
					return nil, fmt.Errorf("checkpoint: reference a range: value log %s of checkpoint %s (%s) and of checkpoint %s (%s) are different files under one number; restore the range by copying",
						vm.FileNum, prev.src, prev.ref, src, ref)
				}
				continue
			}
			vlogs[vm.FileNum] = vlogSource{src: src, ref: ref}
			u.edit.NewVlogs = append(u.edit.NewVlogs, vm)
			u.edit.SharedFiles = append(u.edit.SharedFiles, manifest.SharedFile{Vlog: true, FileNum: vm.FileNum, Ref: ref})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return base.Compare(a.lo.UserKey, b.lo.UserKey) })
	for i := 1; i < len(spans); i++ {
		if endsAfter(spans[i-1].hi, base.InternalKey{UserKey: spans[i].lo.UserKey, Trailer: base.RangeDelSentinel}) {
			return nil, fmt.Errorf("checkpoint: reference a range: checkpoints %s and %s overlap in the range (keys %q to %q and %q to %q)",
				spans[i-1].src, spans[i].src, spans[i-1].lo.UserKey, spans[i-1].hi.UserKey, spans[i].lo.UserKey, spans[i].hi.UserKey)
		}
	}
	// The tables take numbers of the new database: two checkpoints'
	// tables may have one number.
	for _, t := range tables {
		t.f.FileNum = u.next
		u.next++
		u.edit.NewFiles = append(u.edit.NewFiles, manifest.NewFile{Level: t.level, Meta: t.f})
		u.edit.SharedFiles = append(u.edit.SharedFiles, manifest.SharedFile{FileNum: t.f.FileNum, Ref: t.ref})
	}
	u.manifestNum = max(u.manifestNum, u.next)
	u.next = u.manifestNum + 1
	return u, nil
}

// endsAfter reports whether the upper bound a reaches past b: a holds a
// key that b's range does not (an exclusive sentinel bound ends before
// its user key).
func endsAfter(a, b base.InternalKey) bool {
	c := base.Compare(a.UserKey, b.UserKey)
	return c > 0 || (c == 0 && b.IsRangeDelSentinel() && !a.IsRangeDelSentinel())
}
