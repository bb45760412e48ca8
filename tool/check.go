package tool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

// CheckReport is what check found in a database.
type CheckReport struct {
	Dir string
	// Problems are damage or inconsistencies, each naming the file and,
	// where there is one, the offset. Any problem fails the check.
	Problems []string
	// Notes are states a crash or a running writer leaves that recovery
	// handles (files not in the manifest, a torn WAL tail).
	Notes []string

	Manifest                          string
	Tables, Blocks, Entries, Pointers int
	TableBytes                        uint64
	Vlogs, Records                    int
	VlogBytes                         uint64
	WALs, Batches                     int
	// Keys is the number of keys a full scan through a read-only open
	// returned.
	Keys int
}

// OK reports whether the check found no problem.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// maxProblemsPerFile bounds the problems reported for one file.
const maxProblemsPerFile = 20

func (r *CheckReport) problemf(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

func (r *CheckReport) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Write prints the report.
func (r *CheckReport) Write(w io.Writer) {
	fmt.Fprintf(w, "check %s\n", r.Dir)
	if r.Manifest != "" {
		fmt.Fprintf(w, "  manifest    %s\n", r.Manifest)
	}
	fmt.Fprintf(w, "  tables      %d (%d bytes): %d blocks, %d entries, %d value pointers\n", r.Tables, r.TableBytes, r.Blocks, r.Entries, r.Pointers)
	fmt.Fprintf(w, "  value logs  %d (%d bytes): %d records\n", r.Vlogs, r.VlogBytes, r.Records)
	fmt.Fprintf(w, "  WALs        %d: %d batches\n", r.WALs, r.Batches)
	fmt.Fprintf(w, "  scan        %d keys and values through a read-only open\n", r.Keys)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "PROBLEM: %s\n", p)
	}
	if r.OK() {
		fmt.Fprintln(w, "OK")
	} else {
		fmt.Fprintf(w, "%d problems\n", len(r.Problems))
	}
}

func (t *Tool) runCheck(args []string) int {
	fs := t.newFlags("check")
	store := fs.String("store", "", "audit this store (a local store's directory, or "+s3URLScheme+"BUCKET[/PREFIX]) with the databases given")
	quick := fs.Bool("quick", false, "with --store: check that objects exist with their sizes, without reading them")
	fix := fs.Bool("fix", false, "with --store: delete the unreferenced objects, write the markers missing from objects in use")
	all := fs.Bool("all", false, "with --store: the databases given are every one that uses the store (another instance's markers and holds are stray)")
	pos, err := parse(fs, args, 0, 1<<20)
	if err != nil {
		return t.usageError("check", err)
	}
	if *store != "" {
		return t.runCheckStore(*store, pos, StoreCheckOptions{Quick: *quick, Fix: *fix, All: *all})
	}
	switch {
	case *quick || *fix || *all:
		return t.usageError("check", errors.New("--quick, --fix and --all go with --store"))
	case len(pos) != 1:
		return t.usageError("check", fmt.Errorf("wrong number of arguments (%d)", len(pos)))
	}
	r := Check(t.FS, pos[0], t.options(true))
	r.Write(t.Stdout)
	if !r.OK() {
		return 1
	}
	return 0
}

// vlogIndex is what check learned of one value log by scanning it: the
// offset and length of every record, in file order.
type vlogIndex struct {
	reader  *vlog.Reader
	offsets []uint64
	lengths []uint32
	refs    manifest.VlogRef // what the tables' pointers reach, counted by check
	// unfinished: the value log has no footer (a value log written at
	// commit that recovery adopted after a crash).
	unfinished bool
	// scanEnd is where a scan that failed stopped: records from there on
	// are not indexed, and pointers to them are checked by reading them.
	scanEnd  uint64
	scanFail bool
	// recordsEnd is where the scan stopped.
	recordsEnd uint64
}

// Check verifies the database in dir without writing anything:
//
//   - the manifest named by CURRENT decodes, and its version is ordered;
//   - every value log it lists exists with its recorded size, is
//     finished, and every record verifies, with the footer's counts and
//     the manifest's;
//   - every table it lists exists with its recorded size, and every block
//     verifies (checksum, decoding); entries are in order, inside the
//     table's recorded bounds and sequence range, and agree with its
//     properties;
//   - every value pointer lands on a record boundary of a listed value
//     log, with the record's length and key (the record is read and
//     verified);
//   - the garbage ledger: each table's pointers reach exactly the bytes
//     its references meta block and its manifest entry say, the tables'
//     references sum to each value log's live bytes, and live bytes never
//     exceed a value log's records (live + garbage = records);
//   - the WALs recovery would replay decode (a torn tail is a note);
//   - the database opens read-only (recovery, adoption of value logs
//     written at commit) and a full scan reads every value.
//
// opts are the options of the read-only open (nil: defaults; FS and
// ReadOnly are set, and Merger, if not, to the built-in merger the
// database records).
func Check(fs vfs.FS, dir string, opts *strata.Options) *CheckReport {
	r := &CheckReport{Dir: dir}
	var mu sync.Mutex
	vs, err := manifest.Load(manifest.Options{FS: fs, Dirname: dir, Mu: &mu})
	if err != nil {
		r.problemf("manifest: %v", err)
		return r
	}
	mu.Lock()
	v := vs.Current()
	logNum, lastSeq, manifestNum := vs.LogNum(), vs.LastSeq(), vs.ManifestNum()
	mu.Unlock()
	r.Manifest = fmt.Sprintf("%s: log %s, last seq %d", base.MakeFilename(base.FileTypeManifest, manifestNum), logNum, lastSeq)
	if err := v.CheckOrdering(); err != nil {
		r.problemf("manifest: levels out of order: %v", err)
	}
	if err := v.CheckLedger(); err != nil {
		r.problemf("manifest: %v", err)
	}

	vlogs := make(map[base.FileNum]*vlogIndex)
	defer func() {
		for _, x := range vlogs {
			if x.reader != nil {
				x.reader.Close()
			}
		}
	}()
	for _, m := range v.SortedVlogs() {
		vlogs[m.FileNum] = checkVlog(r, fs, dir, m)
	}
	v.Files(func(level int, f *manifest.FileMetadata) {
		checkTable(r, fs, dir, level, f, vlogs)
	})
	checkLedger(r, v, vlogs)
	checkDirectory(r, fs, dir, v, logNum, manifestNum)
	checkOpen(r, dir, opts, fs)
	return r
}

// checkVlog scans value log m.
func checkVlog(r *CheckReport, fs vfs.FS, dir string, m *manifest.VlogMetadata) *vlogIndex {
	x := &vlogIndex{}
	name := base.MakeFilename(base.FileTypeVlog, m.FileNum)
	st, err := fs.Stat(fs.PathJoin(dir, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.problemf("%s: value log in the manifest is missing from the directory", name)
		} else {
			r.problemf("%s: %v", name, err)
		}
		return x
	}
	r.Vlogs++
	r.VlogBytes += uint64(st.Size())
	if uint64(st.Size()) != m.Size {
		r.problemf("%s: file has %d bytes, the manifest says %d", name, st.Size(), m.Size)
	}
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		r.problemf("%s: %v", name, err)
		return x
	}
	rd, err := vlog.NewReader(f, m.FileNum, st.Size(), vlog.ReaderOptions{})
	if err != nil {
		f.Close()
		r.problemf("%s: %v", name, err)
		return x
	}
	x.reader = rd
	if !rd.Finished() {
		// Recovery adopts the value log a crash left unfinished (see the
		// root's recover_vlog.go): its records are read up to the first
		// that does not verify.
		x.unfinished = true
		r.notef("%s has no valid footer (a value log written at commit that recovery adopted after a crash, or a damaged footer)", name)
	}
	sc := rd.NewScanner()
	var values uint64
	for sc.Next() {
		p := sc.Pointer()
		x.offsets = append(x.offsets, p.Offset)
		x.lengths = append(x.lengths, p.Length)
		values += uint64(p.ValueLen)
	}
	r.Records += len(x.offsets)
	if err := sc.Err(); err != nil {
		r.problemf("%s: %v", name, err)
		x.scanFail, x.scanEnd = true, sc.Offset()
	} else if uint64(len(x.offsets)) != m.Records || values != m.ValueBytes {
		r.problemf("%s: holds %d records of %d value bytes, the manifest says %d records of %d value bytes",
			name, len(x.offsets), values, m.Records, m.ValueBytes)
	}
	x.recordsEnd = sc.Offset()
	switch {
	case !x.unfinished && m.RecordsEnd != 0:
		r.problemf("%s: has a footer, but the manifest records it as a value log without one (records end at %d)", name, m.RecordsEnd)
	case x.unfinished && m.RecordsEnd != 0 && !x.scanFail && m.RecordsEnd != x.recordsEnd:
		r.problemf("%s: its valid records end at offset %d, the manifest says %d", name, x.recordsEnd, m.RecordsEnd)
	case x.unfinished && m.RecordsEnd == 0:
		r.notef("%s: the manifest does not record where the records of this footer-less value log end (adopted by a build before it did): its garbage ledger counts a footer it does not have", name)
	}
	return x
}

// tableCheck accumulates the problems of one table, up to a bound.
type tableCheck struct {
	r        *CheckReport
	name     string
	problems int
}

func (c *tableCheck) problemf(format string, args ...any) {
	c.problems++
	if c.problems <= maxProblemsPerFile {
		c.r.problemf(c.name+": "+format, args...)
	} else if c.problems == maxProblemsPerFile+1 {
		c.r.problemf("%s: more problems not shown", c.name)
	}
}

// checkTable verifies table f of level and the pointers it holds.
func checkTable(r *CheckReport, fs vfs.FS, dir string, level int, f *manifest.FileMetadata, vlogs map[base.FileNum]*vlogIndex) {
	name := base.MakeFilename(base.FileTypeTable, f.FileNum)
	c := &tableCheck{r: r, name: name}
	st, err := fs.Stat(fs.PathJoin(dir, name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			c.problemf("table in the manifest (L%d) is missing from the directory", level)
		} else {
			c.problemf("%v", err)
		}
		return
	}
	r.Tables++
	r.TableBytes += uint64(st.Size())
	if uint64(st.Size()) != f.Size {
		c.problemf("file has %d bytes, the manifest says %d", st.Size(), f.Size)
	}
	file, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		c.problemf("%v", err)
		return
	}
	rd, err := sstable.NewReader(file, st.Size(), sstable.ReaderOptions{FileNum: f.FileNum})
	if err != nil {
		file.Close()
		c.problemf("%v", err)
		return
	}
	defer rd.Close()
	layout, err := rd.Layout()
	if err != nil {
		c.problemf("%v", err)
		return
	}
	var (
		prev            []byte
		first, last     base.InternalKey
		entries, dels   uint64
		dataBlocks      uint64
		refs            vlog.RefCounter
		minSeq, maxSeq  = base.SeqNumMax, base.SeqNum(0)
		sawEntry        bool
		refsBlockStored []manifest.VlogRef
		refsBlockFound  bool
	)
	for _, b := range layout {
		data, _, err := rd.ReadBlock(b)
		r.Blocks++
		if err != nil {
			c.problemf("%s block: %v", b.Type, err)
			continue
		}
		switch b.Type {
		case vlog.RefsBlock:
			refsBlockFound = true
			if refsBlockStored, err = vlog.DecodeRefs(data); err != nil {
				c.problemf("%s block at offset %d: %v", b.Type, b.Offset, err)
			}
		case "data":
			dataBlocks++
			err := rd.BlockEntries(b, data, func(k, val []byte) error {
				ik, ok := base.DecodeInternalKey(k)
				if !ok {
					return base.CorruptionErrorf(name, int64(b.Offset), "key %x shorter than a trailer", k)
				}
				if f.SeqOffset != 0 {
					// An ingested table: reads see its numbers offset.
					ik = ik.WithSeqOffset(f.SeqOffset)
				}
				if prev != nil && base.CompareEncoded(prev, k) >= 0 {
					c.problemf("data block at offset %d: key %s does not follow the previous block's last key", b.Offset, ik)
				}
				prev = append(prev[:0], k...)
				if !sawEntry {
					first = ik.Clone()
					sawEntry = true
				}
				last = ik.Clone()
				entries++
				minSeq, maxSeq = min(minSeq, ik.SeqNum()), max(maxSeq, ik.SeqNum())
				switch ik.Kind() {
				case base.KindDelete:
					dels++
				case base.KindValuePointer, base.KindValuePointerMeta:
					r.Pointers++
					if _, enc, err := base.SplitEntry(ik.Kind(), val); err != nil {
						c.problemf("data block at offset %d: key %s: %v", b.Offset, ik, err)
					} else {
						checkPointer(c, b.Offset, ik.UserKey, enc, vlogs, &refs)
					}
				case base.KindSetMeta:
					if _, _, err := base.SplitEntry(ik.Kind(), val); err != nil {
						c.problemf("data block at offset %d: key %s: %v", b.Offset, ik, err)
					}
				case base.KindSet, base.KindMerge:
				default:
					c.problemf("data block at offset %d: key %s has unknown kind", b.Offset, ik)
				}
				return nil
			})
			if err != nil {
				c.problemf("%v", err)
			}
		}
	}
	r.Entries += int(entries)
	props := rd.Properties()
	if props.NumEntries != entries || props.NumDeletions != dels || props.NumDataBlocks != dataBlocks {
		c.problemf("properties say %d entries (%d deletions) in %d data blocks, the table holds %d (%d) in %d",
			props.NumEntries, props.NumDeletions, props.NumDataBlocks, entries, dels, dataBlocks)
	}
	// A virtual table's file holds keys outside its bounds, which reads
	// do not see; its sequence numbers and references are the file's.
	if sawEntry && !f.Virtual {
		if base.InternalCompare(first, f.Smallest) < 0 || base.InternalCompare(last, f.Largest) > 0 {
			c.problemf("entries span [%s, %s], outside the manifest's bounds [%s, %s]", first, last, f.Smallest, f.Largest)
		}
	}
	if sawEntry && (minSeq < f.SmallestSeq || maxSeq > f.LargestSeq) {
		c.problemf("sequence numbers span [%d, %d], outside the manifest's [%d, %d]", minSeq, maxSeq, f.SmallestSeq, f.LargestSeq)
	}
	for _, tomb := range rd.RangeTombstones() {
		if !f.Virtual && (base.Compare(tomb.Start, f.Smallest.UserKey) < 0 || base.Compare(tomb.End, f.Largest.UserKey) > 0) {
			c.problemf("range tombstone [%q, %q) outside the manifest's bounds [%s, %s]", tomb.Start, tomb.End, f.Smallest, f.Largest)
		}
	}
	counted := refs.Take()
	for _, ref := range counted {
		if x := vlogs[ref.FileNum]; x != nil {
			x.refs.Bytes += ref.Bytes
			x.refs.Pointers += ref.Pointers
		}
	}
	if !refsEqual(counted, refsBlockStored) {
		if !refsBlockFound && len(counted) > 0 {
			c.problemf("has value pointers but no %s block", vlog.RefsBlock)
		} else if refsBlockFound {
			c.problemf("%s block says %s, the pointers reach %s", vlog.RefsBlock, refsString(refsBlockStored), refsString(counted))
		}
	}
	if f.VlogRefsKnown && !refsEqual(counted, f.VlogRefs) {
		c.problemf("the manifest's references are %s, the pointers reach %s", refsString(f.VlogRefs), refsString(counted))
	}
}

// checkPointer checks one value pointer of table c, found in the data
// block at blockOff.
func checkPointer(c *tableCheck, blockOff uint64, key, val []byte, vlogs map[base.FileNum]*vlogIndex, refs *vlog.RefCounter) {
	p, err := vlog.DecodePointer(val)
	if err != nil {
		c.problemf("data block at offset %d: key %q: %v", blockOff, key, err)
		return
	}
	refs.Add(p)
	vname := base.MakeFilename(base.FileTypeVlog, p.FileNum)
	x := vlogs[p.FileNum]
	if x == nil {
		c.problemf("key %q points into %s, which the manifest does not list", key, vname)
		return
	}
	if x.reader == nil {
		return // the value log's own problem is reported
	}
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i] >= p.Offset })
	if x.scanFail && p.Offset >= x.scanEnd {
		// Past the damage the scan stopped at: read the record itself.
		if _, err := x.reader.Get(p, key); err != nil {
			c.problemf("key %q: %v", key, err)
		}
		return
	}
	if i == len(x.offsets) || x.offsets[i] != p.Offset {
		c.problemf("key %q: pointer %s does not land on a record boundary of %s", key, p, vname)
		return
	}
	if x.lengths[i] != p.Length {
		c.problemf("key %q: pointer %s has length %d, the record at offset %d of %s has %d", key, p, p.Length, p.Offset, vname, x.lengths[i])
		return
	}
	if _, err := x.reader.Get(p, key); err != nil {
		c.problemf("key %q: %v", key, err)
	}
}

func refsEqual(a, b []manifest.VlogRef) bool {
	return slices.EqualFunc(a, b, func(x, y manifest.VlogRef) bool { return x == y })
}

func refsString(refs []manifest.VlogRef) string {
	if len(refs) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range refs {
		parts = append(parts, fmt.Sprintf("%s.vlog: %d pointers, %d bytes", r.FileNum, r.Pointers, r.Bytes))
	}
	return strings.Join(parts, "; ")
}

// checkLedger checks each value log's live bytes against the pointers
// counted in the tables.
func checkLedger(r *CheckReport, v *manifest.Version, vlogs map[base.FileNum]*vlogIndex) {
	for _, m := range v.SortedVlogs() {
		name := base.MakeFilename(base.FileTypeVlog, m.FileNum)
		x := vlogs[m.FileNum]
		// The ledger's record bytes (gc.NewLedger), or for a value log
		// without a footer whose end the manifest does not record, the
		// records the scan found.
		live, records := v.VlogLive(m.FileNum), vlog.MetadataRecordBytes(m)
		if x.unfinished && m.RecordsEnd == 0 && x.recordsEnd >= vlog.HeaderLen {
			records = x.recordsEnd - vlog.HeaderLen
		}
		if x.reader != nil && x.refs.Bytes != live {
			r.problemf("%s: the manifest's ledger counts %d live bytes, the tables' pointers reach %d", name, live, x.refs.Bytes)
		}
		if live > records {
			r.problemf("%s: %d live bytes exceed its %d record bytes (live + garbage must equal records)", name, live, records)
		}
	}
}

// checkDirectory looks at the files the manifest does not list, and reads
// the WALs recovery would replay.
func checkDirectory(r *CheckReport, fs vfs.FS, dir string, v *manifest.Version, logNum, manifestNum base.FileNum) {
	names, err := fs.List(dir)
	if err != nil {
		r.problemf("list %s: %v", dir, err)
		return
	}
	slices.Sort(names)
	tables := make(map[base.FileNum]bool)
	v.Files(func(_ int, f *manifest.FileMetadata) { tables[f.FileNum] = true })
	for _, name := range names {
		typ, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		switch typ {
		case base.FileTypeTable:
			if !tables[num] {
				r.notef("%s is not in the manifest (left by an interrupted flush or compaction; a read-write open deletes it)", name)
			}
		case base.FileTypeVlog:
			if v.Vlogs[num] == nil {
				r.notef("%s is not in the manifest (written at commit and adopted at the next open if the WAL points into it, or deleted)", name)
			}
		case base.FileTypeManifest:
			if num != manifestNum {
				r.notef("%s is not the current manifest (deleted at the next read-write open)", name)
			}
		case base.FileTypeLog:
			if num < logNum {
				r.notef("%s is older than the manifest's log number (deleted at the next read-write open)", name)
				continue
			}
			checkWAL(r, fs, dir, name)
		}
	}
}

// checkWAL reads WAL name: every record must be a batch that decodes; a
// torn tail ends it.
func checkWAL(r *CheckReport, fs vfs.FS, dir, name string) {
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		r.problemf("%s: %v", name, err)
		return
	}
	defer f.Close()
	r.WALs++
	rd := record.NewReader(f, name)
	for {
		off := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			r.problemf("%s: %v", name, err)
			return
		}
		r.Batches++
		seq, entries, err := decodeBatch(rec)
		if err != nil {
			r.problemf("%s at offset %d: %v", name, off, err)
			continue
		}
		if seq == 0 && len(entries) > 0 {
			r.problemf("%s at offset %d: batch has sequence number 0", name, off)
		}
		for _, e := range entries {
			if e.kind.IsPointer() {
				_, enc, err := base.SplitEntry(e.kind, e.value)
				if err == nil {
					_, err = vlog.DecodePointer(enc)
				}
				if err != nil {
					r.problemf("%s at offset %d: key %q: %v", name, off, e.key, err)
				}
			}
		}
	}
}

// checkOpen opens the database read-only, as a user would, and reads
// every key and value.
func checkOpen(r *CheckReport, dir string, opts *strata.Options, fs vfs.FS) {
	var o strata.Options
	if opts != nil {
		o = *opts
	}
	o.FS, o.ReadOnly = fs, true
	if o.Merger == nil {
		o.Merger = recordedMerger(fs, dir)
	}
	db, err := strata.Open(dir, &o)
	if err != nil {
		r.problemf("read-only open: %v%s", err, mergerHint(err))
		return
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		r.problemf("read-only open: iterator: %v", err)
		return
	}
	for ok := it.First(); ok; ok = it.Next() {
		if it.Value() == nil && it.Error() != nil {
			break // every value is read: a separated one from its value log
		}
		r.Keys++
	}
	// Close returns the error that ended the scan, if one did: a read that
	// fails is a problem, never the end of the keys.
	if err := it.Close(); err != nil {
		r.problemf("full scan failed after %d keys: %v%s", r.Keys, err, mergerHint(err))
	}
}
