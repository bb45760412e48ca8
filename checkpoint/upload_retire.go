package checkpoint

import (
	"context"
	"fmt"
	"time"
)

// Retire drops all but the newest keep checkpoints of u's registry
// without taking one, and deletes what no retained checkpoint needs any
// longer (objects other holders still use stay theirs: an instance opened
// from a dropped checkpoint keeps reading it). It is how a registry whose
// instance is gone is emptied: after a rescale, once the new instances
// have taken their first checkpoints, the old instances' registries are
// retired with keep 0 (KeepLast counts the checkpoints of one registry
// only). Its commit takes a checkpoint id, so ids are never reused, and
// it is as safe against a crash between any two requests as an upload's
// drops are: the registry is replaced first, the objects are deleted
// after. The Stats describe the registry afterwards (ID is the id the
// commit took).
func (u *Uploader) Retire(ctx context.Context, keep int) (Stats, error) {
	if keep < 0 {
		return Stats{}, fmt.Errorf("checkpoint: retire: keep %d is negative", keep)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	start := time.Now()
	cur, _, err := loadRegistry(ctx, u.store)
	if err != nil {
		return Stats{}, err
	}
	if len(cur.Checkpoints) <= keep {
		var st Stats
		cur.fillStats(&st, 0)
		return st, nil
	}
	next := cur.clone()
	id := next.NextID
	// A new id, though no checkpoint takes it: commit tells a registry
	// it replaced from the one it found by the next id.
	next.NextID++
	up := &upload{u: u, ctx: ctx, start: start, id: id, next: next, stats: Stats{ID: id}}
	up.dropped = next.dropOldest(len(next.Checkpoints) - keep)
	next.Format = registryFormat
	up.unused = dropUnused(next, up.dropped)
	if err := next.check(); err != nil {
		return Stats{}, fmt.Errorf("checkpoint: the registry built is inconsistent (a bug): %w", err)
	}
	if err := up.commit(); err != nil {
		return Stats{}, err
	}
	up.sweep()
	next.fillStats(&up.stats, up.regSize)
	up.stats.Duration = time.Since(start)
	return up.stats, nil
}
