package checkpoint

// This file owns what an upload deletes, and when. Before the commit,
// dropUnused takes out of the next registry the objects no retained
// checkpoint uses; after it, sweep deletes those and every object under
// data/ or checkpoints/ the committed registry does not name (what failed
// or interrupted uploads left); and an upload that fails before its
// commit deletes what it wrote (abort). The rule: an object is deleted
// only when no registry the store may hold names it.

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/strata-db/strata/remote"
)

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

// hold writes the registry's marker on each shared file's object next
// references and the store's registry did not, before the commit that
// names them (see package remote): from then on the object stays while
// the registry names it, whatever its database does with the file. The
// database holds it meanwhile (its version is pinned while it uploads).
func (up *upload) hold() error {
	// Every one counts as held before its request, which may write the
	// marker and fail all the same: abort drops them all.
	up.held = append(up.held, up.external...)
	_, err := remote.AddRefs(up.ctx, up.u.store, up.external, up.u.reg.holder)
	return err
}

// sweep deletes, once next is committed, what register dropped from it
// and any other object under data/ or checkpoints/ it does not name, and
// drops the registry's markers on objects it does not name. An object
// another holder still marks (a database opened from a checkpoint reads
// it) loses the registry's marker and stays: remote.DropRef deletes an
// object with its last marker. A List or Delete that fails is counted
// in CleanupErrors; the next upload's sweep, which finds the object
// listed and not named, retries it.
//
// Crash safety: it runs only after commit's Put returned, so the store's
// registry names none of what it deletes; a crash part way leaves objects
// no registry names, which the next sweep finds.
func (up *upload) sweep() {
	listed, err := up.u.listOwn(up.ctx)
	if err != nil {
		up.stats.CleanupErrors++
	}
	marked, err := remote.Marked(up.ctx, up.u.store)
	if err != nil {
		up.stats.CleanupErrors++
		return
	}
	// Side by side: each release waits for up to four round trips (the
	// marker's Delete, the Lists of markers and holds, the object's
	// Delete), and a checkpoint after much compaction drops dozens of
	// objects, which the upload's caller would wait for one by one.
	names := toSweep(up.next, up.u.reg.holder, up.unused, listed, marked)
	var mu sync.Mutex
	_ = runParallel(up.ctx, sweepParallel, len(names), func(ctx context.Context, i int) error {
		err := up.u.release(ctx, names[i], marked[names[i]])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			up.stats.CleanupErrors++
		} else {
			up.stats.DeletedObjects++
		}
		return nil // the others go on
	})
}

// listOwn lists the objects the uploader's registry may have written:
// under its data prefix, and for the store's default registry the
// manifests of format 1, leaving out the named registries' data objects
// (each registry sweeps its own). What one List returned stays in the
// result when another fails.
func (u *Uploader) listOwn(ctx context.Context) ([]ObjectInfo, error) {
	prefixes := []string{u.reg.data}
	if u.reg.name == "" {
		prefixes = append(prefixes, manifestPrefix)
	}
	var listed []ObjectInfo
	var firstErr error
	for _, prefix := range prefixes {
		list, err := u.store.List(ctx, prefix)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		for _, o := range list {
			if u.reg.name == "" && strings.HasPrefix(o.Name, dataPrefix) && strings.Contains(o.Name[len(dataPrefix):], "/") {
				continue // a named registry's
			}
			listed = append(listed, o)
		}
	}
	return listed, firstErr
}

// sweepParallel bounds the releases a sweep has in flight.
const sweepParallel = 16

// release drops the registry's hold on the object name, whose markers
// are holders: an object no marker or hold holds is deleted (a manifest
// of a format-1 checkpoint, or a data object written before markers), a
// marked one loses the registry's marker and goes with the last one.
func (u *Uploader) release(ctx context.Context, name string, holders []string) error {
	if len(holders) == 0 {
		// A hold may name it (an instance opened from a checkpoint that
		// dropped its marker since): DeleteUnheld looks.
		_, err := remote.DeleteUnheld(ctx, u.store, name)
		return err
	}
	if !slices.Contains(holders, u.reg.holder) {
		return nil // others hold it; the registry never did or no longer does
	}
	_, err := remote.DropRef(ctx, u.store, name, u.reg.holder)
	return err
}

// toSweep returns what a sweep after the commit of r releases, each name
// once: unused (what register dropped from r), the objects of listed
// that r does not name, and the objects r does not name that marked says
// the registry marks (a crash between a marker and the commit naming its
// object leaves one).
func toSweep(r *registry, holder string, unused []string, listed []ObjectInfo, marked map[string][]string) []string {
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
	var stray []string
	for name, holders := range marked {
		if !keep[name] && !seen[name] && slices.Contains(holders, holder) {
			stray = append(stray, name)
		}
	}
	slices.Sort(stray)
	for _, name := range stray {
		seen[name] = true
		del = append(del, name)
	}
	return del
}

// names returns the names of the objects r names: itself, its data
// objects and the manifest objects of its format-1 checkpoints.
func (r *registry) names() map[string]bool {
	keep := map[string]bool{r.object: true}
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

// abort releases, unless the upload may have committed, the objects write
// put (which no registry names) and the registry's marks hold made.
func (up *upload) abort() {
	if !up.committed {
		up.u.releaseBestEffort(append(up.written, up.held...))
	}
}

// releaseBestEffort releases names (see release), ignoring errors: what
// a failed upload wrote or marked. Whatever remains, the next upload's
// sweep releases.
func (u *Uploader) releaseBestEffort(names []string) {
	ctx := context.Background()
	for _, name := range names {
		holders, err := remote.Holders(ctx, u.store, name)
		if err != nil {
			continue
		}
		_ = u.release(ctx, name, holders)
	}
}
