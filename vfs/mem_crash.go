package vfs

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// CrashOptions configures CrashClone.
type CrashOptions struct {
	// TornWrites keeps, for each file, a random part of the data written
	// since its last sync, as a disk may have persisted some of it before
	// power was lost. Off (the default), only synced data survives.
	TornWrites bool
	// ZeroedPages lets a file keep its size without its data: each 4 KiB
	// page (PageSize, at offsets that are multiples of it) of the unsynced
	// part a torn write keeps holds zeros instead, with probability 1/3,
	// as on a filesystem that made the file's new size durable before its
	// data (XFS, or ext4 without data=ordered). It implies TornWrites.
	ZeroedPages bool
	// LeakMetadata lets directory changes reach the disk without a sync
	// of their directory, in the order they were made, as a journaling
	// filesystem commits them: the clone holds a random prefix (none, all,
	// or a uniform length between, as for torn writes) of the creations,
	// removals, renames and links not yet made durable. A rename leaks as
	// a whole. Off (the default), only synced directory entries survive.
	LeakMetadata bool
	// Rand chooses how much of each unsynced tail survives when TornWrites
	// is set, which pages ZeroedPages zeroes and how many changes
	// LeakMetadata keeps. Files are visited in sorted path order, so a
	// seeded Rand makes a crash replay exactly. Nil means a source with a
	// fixed seed.
	Rand *rand.Rand
}

// PageSize is the unit of the pages CrashOptions.ZeroedPages zeroes.
const PageSize = 4096

// CrashClone returns a new MemFS holding what a machine would find after
// power loss at this instant, and leaves fs untouched and usable.
//
// The clone holds only durable directory entries reachable from the root
// through durable entries, each naming its file with the file's durable
// (synced) contents. A directory whose entry in its parent is not durable
// (one made by MkdirAll before the parent was synced) is missing with all
// below it. Hard links that are both durable stay one shared file.
// Everything in the clone is durable. The clone shares no mutable state with
// fs.
//
// With TornWrites, a file that only grew since its last sync keeps its
// synced contents plus a random prefix of the appended tail: with
// probability 1/4 none of it, 1/4 all of it, otherwise a length drawn
// uniformly between. A file that was truncated by Create (or overwritten
// below its synced length) since its last sync comes back, with probability
// 1/2 each, either with its synced contents or as a random prefix (drawn
// the same way) of its current contents: the truncation reached the disk,
// with part of what was written after it. Without TornWrites such a file
// has its synced contents: a truncation is not durable until a sync.
//
// A directory reachable by more than one durable path (possible only when
// directories were renamed and their parents synced separately) appears
// only at the first path in sorted order.
//
// The clone is one instant even while other goroutines write and sync:
// it excludes every write and sync for as long as it runs. (Copying files
// one by one while a sync of a value log and a manifest edit that names it
// ran in between once produced a manifest naming data that no instant ever
// held unsynced.)
func (fs *MemFS) CrashClone(opts CrashOptions) *MemFS {
	fs.lock()
	defer fs.mu.Unlock()
	c := &crashCloner{
		files:  map[*memNode]*memNode{},
		dirs:   map[*memNode]bool{},
		zeroed: opts.ZeroedPages,
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 2))
	}
	if opts.TornWrites || opts.ZeroedPages {
		c.rng = rng
	}
	if opts.LeakMetadata {
		c.leaked = leakedEntries(fs.pending[:tornLen(rng, len(fs.pending))])
	}
	return &MemFS{root: c.dir(fs.root)}
}

// leakedEntries applies ops, in order, to the durable entries of the
// directories they change, and returns those directories' entries after
// them.
func leakedEntries(ops []metaOp) map[*memNode]map[string]*memNode {
	out := map[*memNode]map[string]*memNode{}
	for _, op := range ops {
		for _, c := range op.changes[:op.n] {
			m, ok := out[c.dir]
			if !ok {
				m = maps.Clone(c.dir.durableEntries)
				out[c.dir] = m
			}
			if c.node == nil {
				delete(m, c.name)
			} else {
				m[c.name] = c.node
			}
		}
	}
	return out
}

// crashCloner copies the durable state of a tree. The source's MemFS.mu is
// held throughout.
type crashCloner struct {
	rng    *rand.Rand // nil: no torn writes
	zeroed bool       // ZeroedPages
	// leaked are the entries of directories that leaked changes (see
	// CrashOptions.LeakMetadata), in place of their durable entries.
	leaked map[*memNode]map[string]*memNode
	files  map[*memNode]*memNode
	dirs   map[*memNode]bool // already cloned: guards against repeats and cycles
}

func (c *crashCloner) dir(n *memNode) *memNode {
	c.dirs[n] = true
	out := newDirNode(n.perm)
	out.modTime = n.modTime
	entries := n.durableEntries
	if m, ok := c.leaked[n]; ok {
		entries = m
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		child := entries[name]
		var cc *memNode
		if child.isDir {
			if c.dirs[child] {
				continue
			}
			cc = c.dir(child)
		} else {
			cc = c.file(child)
		}
		out.entries[name] = cc
		out.durableEntries[name] = cc
	}
	return out
}

func (c *crashCloner) file(n *memNode) *memNode {
	if cc, ok := c.files[n]; ok {
		return cc
	}
	n.mu.RLock()
	var data []byte
	synced := 0 // data[:synced] is durable
	switch {
	case c.rng == nil:
		data = n.durable
		synced = len(data)
	case n.appendOnly:
		data = n.data[:len(n.durable)+tornLen(c.rng, len(n.data)-len(n.durable))]
		synced = len(n.durable)
	case c.rng.IntN(2) == 0:
		data = n.durable
		synced = len(data)
	default:
		data = n.data[:tornLen(c.rng, len(n.data))]
	}
	cc := &memNode{perm: n.perm, modTime: n.modTime, appendOnly: true}
	cc.data = slices.Clone(data)
	if c.zeroed {
		// Pages past the synced part may have reached the disk as a size
		// without their data.
		for p := synced / PageSize * PageSize; p < len(cc.data); p += PageSize {
			if c.rng.IntN(3) == 0 {
				clear(cc.data[max(p, synced):min(p+PageSize, len(cc.data))])
			}
		}
	}
	cc.durable = cc.data[:len(cc.data):len(cc.data)]
	n.mu.RUnlock()
	c.files[n] = cc
	return cc
}

// tornLen picks how many of n unsynced bytes survive a crash.
func tornLen(rng *rand.Rand, n int) int {
	if n <= 0 {
		return 0
	}
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return n
	default:
		return rng.IntN(n + 1)
	}
}

// String lists every file and directory, for test failure messages: one
// line per entry with the current and synced sizes of files, marking
// entries whose creation or removal is not yet durable.
func (fs *MemFS) String() string {
	fs.rlock()
	defer fs.mu.RUnlock()
	var b strings.Builder
	b.WriteString("MemFS:\n")
	before := b.Len()
	describeDir(&b, fs.root, "")
	if b.Len() == before {
		b.WriteString("  (empty)\n")
	}
	return b.String()
}

// describeDir writes the entries below dir. MemFS.mu must be held.
func describeDir(b *strings.Builder, dir *memNode, prefix string) {
	names := slices.Collect(maps.Keys(dir.entries))
	for name := range dir.durableEntries {
		if _, ok := dir.entries[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		p := prefix + name
		n, current := dir.entries[name]
		d, durable := dir.durableEntries[name]
		var note string
		switch {
		case !current:
			n = d
			note = " [removed; removal not durable]"
		case !durable:
			note = " [entry not durable]"
		case d != n:
			note = " [replaced; not durable]"
		}
		if n.isDir {
			fmt.Fprintf(b, "  %s/%s\n", p, note)
			if current {
				// The current tree has no cycles: Rename refuses to move a
				// directory below itself and directories have no links.
				describeDir(b, n, p+"/")
			}
			continue
		}
		n.mu.RLock()
		size, synced, appendOnly := len(n.data), len(n.durable), n.appendOnly
		n.mu.RUnlock()
		var trunc string
		if !appendOnly {
			trunc = ", truncated since sync"
		}
		fmt.Fprintf(b, "  %s: %d bytes (%d synced%s)%s\n", p, size, synced, trunc, note)
	}
}
