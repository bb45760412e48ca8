package gc

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
)

// Mechanism is how a value log is collected.
type Mechanism int

const (
	// ByRecompaction rewrites, in place, the tables that point into the
	// value log, moving the live values they reference to a new value log.
	ByRecompaction Mechanism = iota
	// ByRewrite copies the value log's records that are the newest version
	// of their key to a new value log and repoints the keys through the
	// write path.
	ByRewrite
)

func (m Mechanism) String() string {
	switch m {
	case ByRecompaction:
		return "recompact"
	case ByRewrite:
		return "rewrite"
	}
	return fmt.Sprintf("mechanism(%d)", int(m))
}

// Collection is a decision to collect one value log.
type Collection struct {
	FileNum   base.FileNum
	Mechanism Mechanism
	// Tables are the tables that point into the file (for Recompact: the
	// ones to rewrite), from the reverse index.
	Tables []TableRef
	// Frees is the bytes the collection frees (the file's size less what is
	// copied out); Writes estimates the bytes it writes.
	Frees, Writes uint64
}

// Decision is what a Policy wants done.
type Decision struct {
	// Delete lists value logs with no live bytes: remove them from the
	// version (the file goes once nothing can read it).
	Delete []base.FileNum
	// Collect lists value logs to collect.
	Collect []Collection
	// CompactL0 asks for L0 to be compacted into the base level even below
	// its compaction threshold. L0 tables hold the newest versions of keys
	// whose older versions the levels below still point to; both count as
	// live until they meet in a compaction. Compacting L0 (tables of keys
	// and pointers, cheap to rewrite) turns the shadowed ones into garbage
	// the next decision can see.
	CompactL0 bool
}

// Empty reports whether the decision asks for nothing.
func (d Decision) Empty() bool { return len(d.Delete) == 0 && len(d.Collect) == 0 && !d.CompactL0 }

// l0ShadowShare is the share of the live bytes that L0's tables must point
// to before an amplification over the ceiling asks for an L0 compaction
// (a value log draining after its rewrite asks for one whatever L0 holds).
const l0ShadowShare = 0.05

// wantL0Compaction reports whether, with space amplification still over
// maxAmp once the decision is carried out, L0 points to enough of the live
// bytes that compacting it may reveal garbage.
func wantL0Compaction(v *manifest.Version, l Ledger, projectedAmp, maxAmp float64) bool {
	if len(v.Levels[0]) == 0 {
		return false
	}
	// A value log whose rewrite is done waits for its old entries to meet
	// the new ones, which the rewrite put in memtables, then L0.
	draining := false
	for _, f := range l.Files {
		draining = draining || (f.Draining && f.Live > 0)
	}
	if !draining && (maxAmp <= 0 || projectedAmp <= maxAmp) {
		return false
	}
	var l0 uint64
	for _, f := range v.Levels[0] {
		if f.Compacting {
			return false
		}
		for _, r := range f.VlogRefs {
			l0 += r.Bytes
		}
	}
	return draining || float64(l0) >= l0ShadowShare*float64(l.LiveBytes())
}

// Policy decides, from a version and its ledger, which value logs to delete
// and which to collect. It must be a pure function of its arguments (and
// its own settings), safe for concurrent use.
type Policy interface {
	// Name identifies the policy in metrics and reports.
	Name() string
	Decide(v *manifest.Version, l Ledger) Decision
}

// Defaults of the policies' settings.
const (
	// DefaultRatio is the garbage ratio past which ReverseLookup collects a
	// value log.
	DefaultRatio = 0.9
	// DefaultRewriteRatio is the garbage ratio past which Rewrite collects a
	// value log (Badger's default discard ratio).
	DefaultRewriteRatio = 0.5
	// DefaultMaxSpaceAmp is the space amplification above which
	// ReverseLookup and Rewrite also collect the most garbage-laden value
	// logs below their ratio.
	DefaultMaxSpaceAmp = 1.5
	// DefaultBudget is Cost's space-amplification budget.
	DefaultBudget = 1.3
	// DefaultMaxInFlight bounds the collections in progress at once, so GC
	// proceeds in steps that leave room for foreground work.
	DefaultMaxInFlight = 4
	// minCollectRatio: below this garbage ratio a file is never worth
	// collecting for space (it would copy nearly all of itself).
	minCollectRatio = 0.2
)

// deletable returns the value logs of l that can be deleted.
func deletable(l Ledger) []base.FileNum {
	if !l.Complete {
		return nil
	}
	var out []base.FileNum
	for _, f := range l.Files {
		if f.Dead() {
			out = append(out, f.FileNum)
		}
	}
	return out
}

// PassivePolicy deletes value logs once nothing points into them, and
// collects nothing.
type PassivePolicy struct{}

// Passive returns the policy that only deletes value logs that are all
// garbage.
func Passive() *PassivePolicy { return &PassivePolicy{} }

func (*PassivePolicy) Name() string { return "passive" }

func (*PassivePolicy) Decide(v *manifest.Version, l Ledger) Decision {
	return Decision{Delete: deletable(l)}
}

// ReverseLookupPolicy deletes dead value logs and recompacts the tables
// that point into value logs whose garbage ratio reaches Ratio; while the
// database's space amplification is above MaxSpaceAmp (0: no ceiling) it
// also takes the most garbage-laden value logs below Ratio (down to a
// garbage ratio of 0.2), until the projected amplification is under the
// ceiling. At most MaxInFlight value logs are collected at once.
type ReverseLookupPolicy struct {
	Ratio float64
	// ForeignRatio, if set and below Ratio, is the threshold of foreign
	// value logs (File.Foreign): ones that instances this database
	// replaced wrote, holding values of their other key ranges too.
	// Collecting them sooner moves this instance's values into value logs
	// of its own, so that the old instances' objects can leave the store
	// once every instance has done so; until the checkpoints that name
	// them age out, the store holds both copies. 0 (the default): Ratio.
	// Measured (TestRescaleStoreSpaceScale, "foreign": 0.5), the store
	// after two rescales held 1.82-1.86x the live state instead of
	// 1.85-2.01x at a churn of 5% a checkpoint, 1.90-1.92x instead of
	// 2.08-2.11x at 10%, but 1.52-1.53x instead of 1.44-1.45x at 2%.
	ForeignRatio float64
	MaxSpaceAmp  float64
	MaxInFlight  int
}

// ReverseLookup returns the default policy with garbage ratio threshold
// ratio (0: DefaultRatio), DefaultMaxSpaceAmp and DefaultMaxInFlight.
func ReverseLookup(ratio float64) *ReverseLookupPolicy {
	if ratio <= 0 {
		ratio = DefaultRatio
	}
	return &ReverseLookupPolicy{Ratio: ratio, MaxSpaceAmp: DefaultMaxSpaceAmp, MaxInFlight: DefaultMaxInFlight}
}

func (p *ReverseLookupPolicy) Name() string { return "reverse-lookup" }

func (p *ReverseLookupPolicy) Decide(v *manifest.Version, l Ledger) Decision {
	return thresholdDecision(v, l, p.Ratio, p.ForeignRatio, p.MaxSpaceAmp, p.MaxInFlight, ByRecompaction)
}

// RewritePolicy is ReverseLookupPolicy's selection (Ratio, MaxSpaceAmp,
// MaxInFlight) collected by the ByRewrite mechanism.
type RewritePolicy struct {
	Ratio        float64
	ForeignRatio float64 // as ReverseLookupPolicy's
	MaxSpaceAmp  float64
	MaxInFlight  int
}

// Rewrite returns the WiscKey-style policy: DefaultRewriteRatio,
// DefaultMaxSpaceAmp, DefaultMaxInFlight.
func Rewrite() *RewritePolicy {
	return &RewritePolicy{Ratio: DefaultRewriteRatio, MaxSpaceAmp: DefaultMaxSpaceAmp, MaxInFlight: DefaultMaxInFlight}
}

func (p *RewritePolicy) Name() string { return "rewrite" }

func (p *RewritePolicy) Decide(v *manifest.Version, l Ledger) Decision {
	return thresholdDecision(v, l, p.Ratio, p.ForeignRatio, p.MaxSpaceAmp, p.MaxInFlight, ByRewrite)
}

// candidates returns the files that may be collected, most garbage first.
func candidates(l Ledger, minRatio float64) []File {
	var out []File
	for _, f := range l.Files {
		if f.Pinned || f.Collecting || f.Draining || f.Live == 0 || f.GarbageRatio() < minRatio {
			continue
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b File) int {
		if c := cmp.Compare(b.GarbageRatio(), a.GarbageRatio()); c != 0 {
			return c
		}
		return cmp.Compare(a.FileNum, b.FileNum)
	})
	return out
}

func inFlight(l Ledger) int {
	n := 0
	for _, f := range l.Files {
		if f.Collecting && !f.Draining {
			n++
		}
	}
	return n
}

func thresholdDecision(v *manifest.Version, l Ledger, ratio, foreignRatio, maxAmp float64, maxInFlight int, m Mechanism) Decision {
	d := Decision{Delete: deletable(l)}
	if !l.Complete {
		return d
	}
	slots := maxInFlight - inFlight(l)
	if maxInFlight <= 0 {
		slots = len(l.Files)
	}
	disk, live := float64(l.DiskBytes()), float64(l.LiveBytes())
	for _, f := range d.Delete {
		if lf, ok := l.File(f); ok {
			disk -= float64(lf.Size)
		}
	}
	var chosen []File
	for _, f := range candidates(l, minCollectRatio) {
		if len(chosen) >= slots {
			break
		}
		overAmp := maxAmp > 0 && live > 0 && disk/live > maxAmp
		threshold := ratio
		if f.Foreign && foreignRatio > 0 {
			threshold = min(ratio, foreignRatio)
		}
		if f.GarbageRatio() < threshold && !overAmp {
			continue // a foreign file further down may qualify
		}
		chosen = append(chosen, f)
		disk -= float64(f.Size - f.Live)
	}
	d.Collect = collections(v, chosen, func(File, []TableRef) Mechanism { return m })
	if live > 0 {
		d.CompactL0 = wantL0Compaction(v, l, disk/live, maxAmp)
	}
	return d
}

// collections builds the Collection of each chosen file with its tables
// and estimated costs; choose picks the mechanism.
func collections(v *manifest.Version, files []File, choose func(File, []TableRef) Mechanism) []Collection {
	if len(files) == 0 {
		return nil
	}
	nums := make(map[base.FileNum]bool, len(files))
	for _, f := range files {
		nums[f.FileNum] = true
	}
	index := ReverseIndex(v, nums)
	out := make([]Collection, 0, len(files))
	for _, f := range files {
		tables := index[f.FileNum]
		m := choose(f, tables)
		out = append(out, Collection{
			FileNum:   f.FileNum,
			Mechanism: m,
			Tables:    tables,
			Frees:     f.Size - f.Live,
			Writes:    estimateWrites(f, tables, m),
		})
	}
	return out
}

// pointerEntryBytes estimates what repointing one key writes: the new
// entry through the write path (WAL record, flushed table) and the old
// entry's last rewrite by the compaction that drops it, which the file
// must wait for before it can be deleted.
const pointerEntryBytes = 128

// estimateWrites estimates the bytes collecting f by m writes: the live
// records copied, plus the tables rewritten (ByRecompaction) or the
// repointed entries (ByRewrite). A table rewritten for recompaction moves
// the values of every value log being collected that it points into, so
// each is charged the table's size in proportion to the bytes the table
// points to in it.
func estimateWrites(f File, tables []TableRef, m Mechanism) uint64 {
	w := f.Live
	switch m {
	case ByRecompaction:
		for _, t := range tables {
			var all uint64
			for _, r := range t.File.VlogRefs {
				all += r.Bytes
			}
			if all == 0 {
				w += t.File.Size
				continue
			}
			w += uint64(float64(t.File.Size) * float64(t.Bytes) / float64(all))
		}
	case ByRewrite:
		w += f.Pointers * pointerEntryBytes
	}
	return w
}

// CostPolicy deletes dead value logs and, while space amplification is
// above Budget, collects value logs in order of the fewest bytes written
// per byte freed, each by whichever mechanism writes less, until the
// projected amplification is within the budget. At most MaxInFlight value
// logs are collected at once.
type CostPolicy struct {
	Budget      float64
	MaxInFlight int
}

// Cost returns the cost-based policy with space-amplification budget
// budget (0: DefaultBudget).
func Cost(budget float64) *CostPolicy {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &CostPolicy{Budget: budget, MaxInFlight: DefaultMaxInFlight}
}

func (p *CostPolicy) Name() string { return "cost" }

func (p *CostPolicy) Decide(v *manifest.Version, l Ledger) Decision {
	d := Decision{Delete: deletable(l)}
	if !l.Complete {
		return d
	}
	disk, live := float64(l.DiskBytes()), float64(l.LiveBytes())
	for _, f := range d.Delete {
		if lf, ok := l.File(f); ok {
			disk -= float64(lf.Size)
		}
	}
	if live == 0 || disk/live <= p.Budget {
		return d
	}
	cands := collections(v, candidates(l, minCollectRatio), func(f File, tables []TableRef) Mechanism {
		if estimateWrites(f, tables, ByRewrite) < estimateWrites(f, tables, ByRecompaction) {
			return ByRewrite
		}
		return ByRecompaction
	})
	// Fewest bytes written per byte freed first.
	slices.SortStableFunc(cands, func(a, b Collection) int {
		return cmp.Compare(float64(a.Writes)/float64(max(a.Frees, 1)), float64(b.Writes)/float64(max(b.Frees, 1)))
	})
	slots := p.MaxInFlight - inFlight(l)
	if p.MaxInFlight <= 0 {
		slots = len(cands)
	}
	for _, c := range cands {
		if len(d.Collect) >= slots || disk/live <= p.Budget {
			break
		}
		d.Collect = append(d.Collect, c)
		disk -= float64(c.Frees)
	}
	d.CompactL0 = wantL0Compaction(v, l, disk/live, p.Budget)
	return d
}

// ByName returns the policy a name (as in kvbench's --gc_policy) stands
// for, with its default settings: "passive", "reverse-lookup", "rewrite" or
// "cost".
func ByName(name string) (Policy, error) {
	switch name {
	case "passive":
		return Passive(), nil
	case "reverse-lookup", "":
		return ReverseLookup(DefaultRatio), nil
	case "rewrite":
		return Rewrite(), nil
	case "cost":
		return Cost(DefaultBudget), nil
	}
	return nil, fmt.Errorf("gc: unknown policy %q (passive, reverse-lookup, rewrite, cost)", name)
}
