package remote

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
)

// References. An object in the store may be referred to by several
// holders: the instance that wrote it, instances opened from checkpoints
// that hold it, and a store's checkpoint registry. Each holder has a
// marker, an empty object refs/<object>/<holder>, for as long as it may
// use the object. The rules that make deletion safe against a crash
// between any two requests:
//
//  1. A holder writes its marker before anything durable of its own (its
//     manifest, the registry) names the object, and before it writes the
//     object itself: an object never exists without a marker, except
//     after its last holder let it go.
//  2. A holder starts to use an object that exists only through another
//     holder's use (opening a checkpoint, referencing a file in a
//     checkpoint): it writes its marker, then checks that the other
//     holder still holds it (the checkpoint is still retained); if not,
//     it drops its marker and fails. The other holder drops its marker
//     only after its own durable state stopped naming the object, so one
//     of the two sees the other.
//  3. A holder drops its marker only once nothing durable of its own
//     names the object; then it lists the object's markers and deletes
//     the object if none is left.
//
// A hold (holds.go) counts as a marker of its holder on each object it
// names. A holder moves from its hold to markers (ConvertHold: the
// markers first, then the hold goes), so rule 3's check reads the
// markers, then the holds, then the markers again: a conversion that
// falls between the first two reads, and is in neither, is in the third.
//
// A crash between the two requests of rule 3 leaves an object without
// markers, which nothing can refer to again (rule 2 needs a holder):
// Sweep deletes such objects. A crash after rule 1's marker and before
// the holder names the object leaves a marker that holds the object for
// nothing (a stray): its holder drops it, an instance at Open and a
// registry in its next upload's sweep; checkpoint.Audit reports them.

// AddRef writes holder's marker on object (rule 1 or 2 above).
func AddRef(ctx context.Context, s Store, object, holder string) error {
	if err := s.Put(ctx, MarkerName(object, holder), bytes.NewReader(nil), 0); err != nil {
		return fmt.Errorf("remote: add reference of %s to %s: %w", holder, object, err)
	}
	return nil
}

// refsParallel bounds the marker PUTs AddRefs has in flight: a store
// answers each after a round trip (S3: 10-100 ms), and a database opened
// from a checkpoint marks every object of it before Open can return.
const refsParallel = 128

// AddRefs writes holder's marker on each of objects (AddRef), up to
// refsParallel at a time: the markers go in any order, and the caller
// names the objects only once AddRefs returned. It returns the objects
// whose markers it wrote, in the order of objects; on a failure, the first
// error as well, once every request it made has returned (it makes no more
// after the failure), so that the caller can drop the markers written.
func AddRefs(ctx context.Context, s Store, objects []string, holder string) ([]string, error) {
	return addRefs(ctx, s, objects, holder, refsParallel)
}

// addRefs is AddRefs with at most parallel requests in flight.
func addRefs(ctx context.Context, s Store, objects []string, holder string, parallel int) ([]string, error) {
	done, first := forEachObject(ctx, objects, parallel, func(ctx context.Context, object string) error {
		return AddRef(ctx, s, object, holder)
	})
	var added []string
	for i, ok := range done {
		if ok {
			added = append(added, objects[i])
		}
	}
	return added, first
}

// forEachObject calls fn for each of objects, up to parallel at a time.
// After the first failure it starts no more calls and cancels the context
// of those in flight; it returns, once every call made has returned,
// which calls succeeded (in the order of objects) and the first error.
func forEachObject(ctx context.Context, objects []string, parallel int, fn func(ctx context.Context, object string) error) ([]bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make([]bool, len(objects))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, parallel)
	for i, object := range objects {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := fn(ctx, object)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				done[i] = true
			} else if first == nil {
				first = err
				cancel()
			}
		}()
	}
	wg.Wait()
	return done, first
}

// DropRef removes holder's marker on object and deletes the object when
// no marker is left (rule 3); deleted says whether it did.
func DropRef(ctx context.Context, s Store, object, holder string) (deleted bool, err error) {
	if err := s.Delete(ctx, MarkerName(object, holder)); err != nil {
		return false, fmt.Errorf("remote: drop reference of %s to %s: %w", holder, object, err)
	}
	return DeleteUnheld(ctx, s, object)
}

// Holders returns the holders whose markers are on object, sorted.
func Holders(ctx context.Context, s Store, object string) ([]string, error) {
	prefix := markerPrefix(object)
	list, err := s.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("remote: list references of %s: %w", object, err)
	}
	var out []string
	for _, o := range list {
		h := strings.TrimPrefix(o.Name, prefix)
		if h != "" && !strings.Contains(h, "/") {
			out = append(out, h)
		}
	}
	return out, nil
}

// Marked returns every marker of the store: for each object that has
// markers, its holders.
func Marked(ctx context.Context, s Store) (map[string][]string, error) {
	list, err := s.List(ctx, refsPrefix)
	if err != nil {
		return nil, fmt.Errorf("remote: list references: %w", err)
	}
	out := make(map[string][]string)
	for _, o := range list {
		if object, holder, ok := ParseMarker(o.Name); ok {
			out[object] = append(out[object], holder)
		}
	}
	return out, nil
}

// ParseMarker reports whether name is a reference marker, and if so the
// object it holds and its holder.
func ParseMarker(name string) (object, holder string, ok bool) {
	rest, ok := strings.CutPrefix(name, refsPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// DeleteUnheld deletes object if no marker and no hold holds it, and says
// whether it did: the deletion Sweep makes, for one object. The caller saw the
// object without markers; they are listed once more, for this object
// alone, just before the Delete, since a holder may have marked it since
// (rule 1 puts a marker before an object, so an object that exists
// unmarked at this check was let go by its last holder, and no holder can
// mark it again without failing rule 2's check).
func DeleteUnheld(ctx context.Context, s Store, object string) (bool, error) {
	holders, err := Holders(ctx, s, object)
	if err != nil {
		return false, err
	}
	if len(holders) > 0 {
		return false, nil
	}
	// After the markers: an opener's hold (holds.go) that this List
	// misses comes after it, and its opener's check then fails.
	if holders, err = heldBy(ctx, s, object); err != nil || len(holders) > 0 {
		return false, err
	}
	// And the markers once more: a hold converted between the two Lists
	// above (ConvertHold puts the markers, then deletes the hold) is in
	// neither of them, but its markers were written before the hold went,
	// so this List sees them.
	if holders, err = Holders(ctx, s, object); err != nil || len(holders) > 0 {
		return false, err
	}
	if err := s.Delete(ctx, object); err != nil {
		return false, fmt.Errorf("remote: delete %s: %w", object, err)
	}
	return true, nil
}

// Sweep deletes the objects under shared/ that no marker holds (what a
// crash between rule 3's two requests leaves) and returns their names.
// Objects that only a registry knows (checkpoint segments) are the
// registry's to delete.
func Sweep(ctx context.Context, s Store) ([]string, error) {
	marked, err := Marked(ctx, s)
	if err != nil {
		return nil, err
	}
	list, err := s.List(ctx, sharedPrefix)
	if err != nil {
		return nil, fmt.Errorf("remote: list shared objects: %w", err)
	}
	var deleted []string
	for _, o := range list {
		if len(marked[o.Name]) > 0 {
			continue
		}
		// Listed before the markers were? Then a marker written since
		// might hold it: DeleteUnheld checks once more.
		ok, err := DeleteUnheld(ctx, s, o.Name)
		if err != nil {
			return deleted, err
		}
		if ok {
			deleted = append(deleted, o.Name)
		}
	}
	return deleted, nil
}
