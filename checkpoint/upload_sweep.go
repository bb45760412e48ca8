package checkpoint

// This file owns what an upload deletes, and when. Before the commit,
// dropUnused takes out of the next registry the objects no retained
// checkpoint uses; after it, sweep deletes those and every object under
// data/ or checkpoints/ the committed registry does not name (what failed
// or interrupted uploads left); and an upload that fails before its
// commit deletes what it wrote (abort). The rule: an object is deleted
// only when no registry the store may hold names it.

import "context"

// dropUnused removes from r the objects none of whose pieces a retained
// checkpoint uses, and returns their names, after those of the manifest
// objects of the dropped checkpoints of format 1: what the sweep after
// r's commit deletes.
func dropUnused(r *registry, dropped []regCheckpoint) []string {
	var unused []string
	for _, c := range dropped {
		if c.Manifest == nil { // a format-1 checkpoint's manifest object
			unused = append(unused, manifestName(c.ID))
		}
	}
	for name, o := range r.Objects {
		live := false
		for _, p := range o.Pieces {
			live = live || p.Refs > 0
		}
		if !live {
			delete(r.Objects, name)
			unused = append(unused, name)
		}
	}
	return unused
}

// sweep deletes, once next is committed, what register dropped from it
// and any other object under data/ or checkpoints/ it does not name. A
// List or Delete that fails is counted in CleanupErrors; the next
// upload's sweep, which finds the object listed and not named, retries
// it.
//
// Crash safety: it runs only after commit's Put returned, so the store's
// registry names none of what it deletes; a crash part way leaves objects
// no registry names, which the next sweep finds.
func (up *upload) sweep() {
	var listed []ObjectInfo
	for _, prefix := range []string{dataPrefix, manifestPrefix} {
		list, err := up.u.store.List(up.ctx, prefix)
		if err != nil {
			up.stats.CleanupErrors++
			continue
		}
		listed = append(listed, list...)
	}
	for _, name := range toSweep(up.next, up.unused, listed) {
		if err := up.u.store.Delete(up.ctx, name); err != nil {
			up.stats.CleanupErrors++
		} else {
			up.stats.DeletedObjects++
		}
	}
}

// toSweep returns what a sweep after the commit of r deletes, each name
// once: unused (what register dropped from r), then the objects of listed
// that r does not name.
func toSweep(r *registry, unused []string, listed []ObjectInfo) []string {
	keep := r.names()
	del := make([]string, 0, len(unused))
	seen := map[string]bool{}
	for _, name := range unused {
		if !seen[name] {
			seen[name] = true
			del = append(del, name)
		}
	}
	for _, o := range listed {
		if !keep[o.Name] && !seen[o.Name] {
			seen[o.Name] = true
			del = append(del, o.Name)
		}
	}
	return del
}

// names returns the names of the objects r names: itself, its data
// objects and the manifest objects of its format-1 checkpoints.
func (r *registry) names() map[string]bool {
	keep := map[string]bool{registryName: true}
	for name := range r.Objects {
		keep[name] = true
	}
	for _, c := range r.Checkpoints {
		if c.Manifest == nil {
			keep[manifestName(c.ID)] = true
		}
	}
	return keep
}

// abort deletes, unless the upload may have committed, the objects write
// put, which no registry names.
func (up *upload) abort() {
	if !up.committed {
		up.u.deleteBestEffort(up.written)
	}
}

// deleteBestEffort deletes names, ignoring errors: what a failed upload
// wrote. Whatever remains, the next upload's sweep deletes.
func (u *Uploader) deleteBestEffort(names []string) {
	ctx := context.Background()
	for _, name := range names {
		_ = u.store.Delete(ctx, name)
	}
}
