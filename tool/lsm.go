package tool

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/gc"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// loadedVersion is the tree a database's manifest describes, read without
// writing anything.
type loadedVersion struct {
	v                   *manifest.Version
	manifest            string
	logNum, nextFileNum base.FileNum
	lastSeq             base.SeqNum
	pending             []*manifest.VlogMetadata // value logs on disk the manifest does not list
	pendingBytesOnDisk  uint64
}

// loadVersion reads the manifest CURRENT names in dir.
func loadVersion(fs vfs.FS, dir string) (*loadedVersion, error) {
	var mu sync.Mutex
	vs, err := manifest.Load(manifest.Options{FS: fs, Dirname: dir, Mu: &mu})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	lv := &loadedVersion{
		v:           vs.Current(),
		manifest:    base.MakeFilename(base.FileTypeManifest, vs.ManifestNum()),
		logNum:      vs.LogNum(),
		lastSeq:     vs.LastSeq(),
		nextFileNum: vs.NextFileNum(),
	}
	mu.Unlock()
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok || typ != base.FileTypeVlog || lv.v.Vlogs[num] != nil {
			continue
		}
		if st, err := fs.Stat(fs.PathJoin(dir, name)); err == nil {
			lv.pending = append(lv.pending, &manifest.VlogMetadata{FileNum: num, Size: uint64(st.Size())})
			lv.pendingBytesOnDisk += uint64(st.Size())
		}
	}
	return lv, nil
}

func (t *Tool) runLSM(args []string) int {
	fs := t.newFlags("lsm")
	hex := fs.Bool("hex", false, "print keys in hex")
	verbose := fs.Bool("verbose", false, "list every value log each table references")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return t.usageError("lsm", err)
	}
	lv, err := loadVersion(t.FS, pos[0])
	if err != nil {
		return t.fail("lsm", err)
	}
	writeLSM(t.Stdout, lv, *hex, *verbose)
	return 0
}

// maxRefsShown bounds the value-log references lsm prints per table.
const maxRefsShown = 4

// writeLSM prints the levels and the value logs.
func writeLSM(w io.Writer, lv *loadedVersion, hex, verbose bool) {
	v := lv.v
	key := func(k base.InternalKey) string {
		return fmt.Sprintf("%s#%d,%s", printableKey(k.UserKey, hex, 24), k.SeqNum(), k.Kind())
	}
	fmt.Fprintf(w, "%s: WALs from %s, last sequence number %d, next file %s\n", lv.manifest, lv.logNum, lv.lastSeq, lv.nextFileNum)
	refs := make(map[base.FileNum]int)
	for level := range manifest.NumLevels {
		files := v.Levels[level]
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(w, "L%d: %d tables, %d bytes\n", level, len(files), v.LevelSize(level))
		for _, f := range files {
			var rs []string
			for i, r := range f.VlogRefs {
				refs[r.FileNum]++
				if i < maxRefsShown || verbose {
					rs = append(rs, fmt.Sprintf("%s.vlog %d pointers %d bytes", r.FileNum, r.Pointers, r.Bytes))
				} else if i == maxRefsShown {
					rs = append(rs, fmt.Sprintf("and %d more value logs (--verbose lists them)", len(f.VlogRefs)-maxRefsShown))
				}
			}
			vrefs := "no value-log references"
			if len(rs) > 0 {
				vrefs = strings.Join(rs, ", ")
			} else if !f.VlogRefsKnown {
				vrefs = "value-log references not recorded"
			}
			flags := ""
			if f.HasRangeDels {
				flags = " range-dels"
			}
			fmt.Fprintf(w, "  %s.sst %d bytes [%s .. %s] seqs [%d, %d]%s: %s\n", f.FileNum, f.Size, key(f.Smallest), key(f.Largest), f.SmallestSeq, f.LargestSeq, flags, vrefs)
		}
	}
	vlogs := v.SortedVlogs()
	var total uint64
	for _, m := range vlogs {
		total += m.Size
	}
	fmt.Fprintf(w, "value logs: %d, %d bytes\n", len(vlogs), total)
	for _, m := range vlogs {
		live := v.VlogLive(m.FileNum)
		rec := vlog.MetadataRecordBytes(m)
		garbage := uint64(0)
		if rec > live {
			garbage = rec - live
		}
		fmt.Fprintf(w, "  %s.vlog %d bytes, %d records (%d value bytes): live %d, garbage %d, referenced by %d tables\n",
			m.FileNum, m.Size, m.Records, m.ValueBytes, live, garbage, refs[m.FileNum])
	}
	for _, m := range lv.pending {
		fmt.Fprintf(w, "  %s.vlog %d bytes: not in the manifest (written at commit; recovery adopts it if the WAL points into it)\n", m.FileNum, m.Size)
	}
}

func (t *Tool) runGC(args []string) int {
	fs := t.newFlags("gc")
	policyName := fs.String("policy", "", "policy: passive, reverse-lookup, rewrite or cost (default: the options', else reverse-lookup)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return t.usageError("gc", err)
	}
	var policy gc.Policy
	if *policyName != "" {
		if policy, err = gc.ByName(*policyName); err != nil {
			return t.usageError("gc", err)
		}
	} else if o := t.options(true); o.GCPolicy != nil {
		policy = o.GCPolicy
	} else {
		policy = gc.ReverseLookup(gc.DefaultRatio)
	}
	lv, err := loadVersion(t.FS, pos[0])
	if err != nil {
		return t.fail("gc", err)
	}
	writeGC(t.Stdout, lv, policy)
	return 0
}

// writeGC prints the garbage ledger of the manifest's version and what
// policy would decide on it. Nothing is pinned or being collected: that
// is the state of a database no process has open (value logs on disk the
// manifest does not list count as pending bytes, as the DB counts its
// active value log).
func writeGC(w io.Writer, lv *loadedVersion, policy gc.Policy) {
	l := gc.NewLedger(lv.v, nil)
	l.PendingBytes = lv.pendingBytesOnDisk
	fmt.Fprintf(w, "garbage ledger (%s)\n", lv.manifest)
	fmt.Fprintf(w, "  tables %d bytes, value logs %d bytes, pending value logs %d bytes, live %d bytes, space amplification %.2f\n",
		l.TableBytes, l.VlogBytes(), l.PendingBytes, l.LiveBytes(), l.SpaceAmp())
	if !l.Complete {
		fmt.Fprintln(w, "  some tables' value-log references are not recorded yet: nothing would be deleted until an open records them")
	}
	for _, f := range l.Files {
		fmt.Fprintf(w, "  %s.vlog size %d, records %d bytes: live %d (%d pointers), garbage %d (%.1f%%)\n",
			f.FileNum, f.Size, f.RecordBytes, f.Live, f.Pointers, f.Garbage(), 100*f.GarbageRatio())
	}
	dec := policy.Decide(lv.v, l)
	fmt.Fprintf(w, "policy %s would decide:\n", policy.Name())
	if dec.Empty() {
		fmt.Fprintln(w, "  nothing")
	}
	for _, num := range dec.Delete {
		f, _ := l.File(num)
		fmt.Fprintf(w, "  delete %s.vlog (no live bytes, frees %d bytes)\n", num, f.Size)
	}
	for _, c := range dec.Collect {
		var tables []string
		for _, r := range c.Tables {
			tables = append(tables, fmt.Sprintf("L%d %s.sst", r.Level, r.File.FileNum))
		}
		fmt.Fprintf(w, "  collect %s.vlog by %s: frees %d bytes, writes about %d; tables pointing into it: %s\n",
			c.FileNum, c.Mechanism, c.Frees, c.Writes, strings.Join(tables, ", "))
	}
	if dec.CompactL0 {
		fmt.Fprintln(w, "  compact L0 into the base level, to reveal the garbage its keys shadow")
	}
}

func (t *Tool) runScan(args []string) int {
	fs := t.newFlags("scan")
	start := fs.String("start", "", "first key (inclusive)")
	end := fs.String("end", "", "end key (exclusive)")
	limit := fs.Int("limit", 0, "print at most this many keys (0: all)")
	hex := fs.Bool("hex", false, "print keys and values in hex")
	full := fs.Bool("full", false, "print whole values (default: the first 64 bytes)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return t.usageError("scan", err)
	}
	db, err := t.openReadOnly(pos[0])
	if err != nil {
		return t.fail("scan", err)
	}
	defer db.Close()
	o := &strata.IterOptions{}
	if *start != "" {
		o.LowerBound = []byte(*start)
	}
	if *end != "" {
		o.UpperBound = []byte(*end)
	}
	it, err := db.NewIter(o)
	if err != nil {
		return t.fail("scan", err)
	}
	max := 64
	if *full {
		max = 0
	}
	n := 0
	for ok := it.First(); ok && (*limit == 0 || n < *limit); ok = it.Next() {
		v := it.Value()
		if v == nil && it.Error() != nil {
			break // a separated value that could not be read: no line for it
		}
		fmt.Fprintf(t.Stdout, "%s %s\n", printableKey(it.Key(), *hex, 0), printable(v, *hex, max))
		n++
	}
	// Close returns the error that ended the loop, if one did.
	if err := it.Close(); err != nil {
		return t.fail("scan", fmt.Errorf("after %d keys: %w", n, err))
	}
	fmt.Fprintf(t.Stderr, "%d keys\n", n)
	return 0
}

func (t *Tool) runGet(args []string) int {
	fs := t.newFlags("get")
	hex := fs.Bool("hex", false, "KEY is in hex, and the value is printed in hex")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return t.usageError("get", err)
	}
	key := []byte(pos[1])
	if *hex {
		if _, err := fmt.Sscanf(pos[1], "%x", &key); err != nil {
			return t.usageError("get", fmt.Errorf("key %q is not hex", pos[1]))
		}
	}
	db, err := t.openReadOnly(pos[0])
	if err != nil {
		return t.fail("get", err)
	}
	defer db.Close()
	v, err := db.Get(key)
	if errors.Is(err, strata.ErrNotFound) {
		fmt.Fprintf(t.Stderr, "%s: not found\n", printable(key, *hex, 0))
		return 1
	}
	if err != nil {
		return t.fail("get", err)
	}
	if *hex {
		fmt.Fprintf(t.Stdout, "%x\n", v)
	} else {
		t.Stdout.Write(v)
		fmt.Fprintln(t.Stdout)
	}
	return 0
}
