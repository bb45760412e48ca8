package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/vfs"
)

// ComparerName is recorded in every manifest; a database written with
// another ordering cannot be opened.
const ComparerName = "strata.bytewise"

// DefaultMaxManifestSize is the manifest size past which the next edit
// starts a new manifest holding a snapshot of the tree.
const DefaultMaxManifestSize = 64 << 20

// Options configure a VersionSet.
type Options struct {
	FS      vfs.FS
	Dirname string
	// Mu is the caller's lock that protects Current. LogAndApply releases it
	// during manifest I/O.
	Mu *sync.Mutex
	// Obsolete is called from whichever goroutine dropped the last
	// reference to a version (possibly with Mu held), with the files no
	// version holds any longer. It must not block or take Mu: it should
	// queue the files for deletion.
	Obsolete func(Obsolete)
	// MaxManifestSize in bytes; 0 means DefaultMaxManifestSize.
	MaxManifestSize int64
	// MinFileNum: Create hands out no file number below it (the numbers of
	// files already in the directory, which a new manifest must not
	// overwrite). 0 or 1: numbering starts at 1.
	MinFileNum base.FileNum
}

// VersionSet is the current version of the tree plus the manifest that
// records how it came to be.
//
// INVARIANT: current changes only in LogAndApply (and Create/Load), with
// Options.Mu held.
type VersionSet struct {
	opts Options

	// Protected by opts.Mu.
	current *Version
	writing bool
	cond    sync.Cond
	logNum  base.FileNum
	lastSeq base.SeqNum

	nextFileNum atomic.Uint64

	// Touched only by the goroutine that set writing.
	manifestNum  base.FileNum
	manifest     *record.Writer
	needRotation bool
	scratch      []byte
}

func newVersionSet(opts Options) *VersionSet {
	if opts.MaxManifestSize <= 0 {
		opts.MaxManifestSize = DefaultMaxManifestSize
	}
	vs := &VersionSet{opts: opts}
	vs.cond.L = opts.Mu
	return vs
}

// Create makes the manifest of a new, empty database.
func Create(opts Options) (*VersionSet, error) {
	vs := newVersionSet(opts)
	vs.nextFileNum.Store(uint64(max(1, opts.MinFileNum)))
	v, _ := Apply(nil)
	v.onZero = vs.opts.Obsolete
	if err := vs.rotate(v); err != nil {
		return nil, err
	}
	v.Ref()
	vs.current = v
	return vs, nil
}

// Load reads CURRENT and the manifest it names and rebuilds the tree. The
// loaded manifest is never appended to (its tail may be torn); the first
// LogAndApply starts a new one.
func Load(opts Options) (*VersionSet, error) {
	vs := newVersionSet(opts)
	fs := opts.FS
	currentName := fs.PathJoin(opts.Dirname, base.MakeFilename(base.FileTypeCurrent, 0))
	manifestName, err := readCurrent(fs, currentName)
	if err != nil {
		return nil, err
	}
	typ, num, ok := base.ParseFilename(manifestName)
	if !ok || typ != base.FileTypeManifest {
		return nil, base.CorruptionErrorf("CURRENT", 0, "names %q, which is not a manifest", manifestName)
	}
	st, err := readManifest(fs, opts.Dirname, manifestName)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, base.CorruptionErrorf("CURRENT", 0, "names %s, which does not exist", manifestName)
		}
		return nil, err
	}
	v, nextFileNum := st.version, st.nextFileNum
	if num >= nextFileNum {
		nextFileNum = num + 1
	}
	v.onZero = opts.Obsolete
	v.Ref()
	vs.current = v
	vs.logNum = st.logNum
	vs.lastSeq = st.lastSeq
	vs.manifestNum = num
	vs.nextFileNum.Store(uint64(nextFileNum))
	vs.needRotation = true
	return vs, nil
}

// ReadVersion reads the manifest name in dir and returns the tree it
// describes, without installing it anywhere (for inspection: an Open that
// finds no CURRENT looks at what a stray manifest describes). An error
// matching os.ErrNotExist means the file does not exist.
func ReadVersion(fs vfs.FS, dir, name string) (*Version, error) {
	st, err := readManifest(fs, dir, name)
	if err != nil {
		return nil, err
	}
	return st.version, nil
}

// manifestState is what a manifest's edits add up to.
type manifestState struct {
	version     *Version
	logNum      base.FileNum
	lastSeq     base.SeqNum
	nextFileNum base.FileNum // past every file the version holds
}

// readManifest replays the edits of manifest name in dir.
func readManifest(fs vfs.FS, dir, manifestName string) (manifestState, error) {
	f, err := fs.Open(fs.PathJoin(dir, manifestName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return manifestState{}, err
		}
		return manifestState{}, fmt.Errorf("strata: open manifest: %w", err)
	}
	defer f.Close()

	r := record.NewStrictReader(f, manifestName)
	var (
		edits         []*VersionEdit
		sawComparer   bool
		haveNext      bool
		nextFileNum   base.FileNum
		logNum        base.FileNum
		lastSeq       base.SeqNum
		recordsParsed int
	)
	for {
		offset := r.Offset()
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, base.ErrCorruption) {
				return manifestState{}, err
			}
			return manifestState{}, fmt.Errorf("strata: read manifest %s at offset %d: %w", manifestName, offset, err)
		}
		ve := &VersionEdit{}
		if err := ve.Decode(rec); err != nil {
			return manifestState{}, base.CorruptionErrorf(manifestName, offset, "%v", err)
		}
		if ve.FormatVersion > FormatVersion {
			return manifestState{}, &base.NewerFormatError{File: manifestName, What: "database", Version: ve.FormatVersion, Newest: FormatVersion}
		}
		recordsParsed++
		if ve.ComparerName != "" {
			if ve.ComparerName != ComparerName {
				return manifestState{}, fmt.Errorf("strata: database uses comparer %q, this build knows only %q", ve.ComparerName, ComparerName)
			}
			sawComparer = true
		}
		if ve.HasLogNum {
			logNum = ve.LogNum
		}
		if ve.HasNextFileNum {
			nextFileNum, haveNext = ve.NextFileNum, true
		}
		if ve.HasLastSeq && ve.LastSeq > lastSeq {
			lastSeq = ve.LastSeq
		}
		edits = append(edits, ve)
	}
	if recordsParsed == 0 || !sawComparer || !haveNext {
		return manifestState{}, base.CorruptionErrorf(manifestName, -1, "manifest is missing its snapshot record (records=%d, comparer=%t, next-file=%t)",
			recordsParsed, sawComparer, haveNext)
	}
	v, err := Apply(nil, edits...)
	if err != nil {
		return manifestState{}, base.CorruptionErrorf(manifestName, -1, "%v", err)
	}
	var maxNum base.FileNum
	v.Files(func(_ int, f *FileMetadata) { maxNum = max(maxNum, f.FileNum) })
	for num := range v.Vlogs {
		maxNum = max(maxNum, num)
	}
	if maxNum >= nextFileNum {
		nextFileNum = maxNum + 1
	}
	if logNum >= nextFileNum {
		nextFileNum = logNum + 1
	}
	return manifestState{version: v, logNum: logNum, lastSeq: lastSeq, nextFileNum: nextFileNum}, nil
}

func readCurrent(fs vfs.FS, name string) (string, error) {
	f, err := fs.Open(name)
	if err != nil {
		return "", fmt.Errorf("strata: open CURRENT: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("strata: read CURRENT: %w", err)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' || bytes.Count(data, []byte{'\n'}) != 1 {
		return "", base.CorruptionErrorf("CURRENT", 0, "malformed contents %q", data)
	}
	return string(data[:len(data)-1]), nil
}

// FillVlogRefs records the value-log references of tables whose manifest
// entry predates them (FileMetadata.VlogRefsKnown false), read by the
// caller from the tables, and recomputes the current version's ledger. The
// next manifest written records them. Only for Open: nothing else may use
// the version set concurrently. Mu held.
func (vs *VersionSet) FillVlogRefs(refs map[base.FileNum][]VlogRef) {
	v := vs.current
	v.Files(func(_ int, f *FileMetadata) {
		if r, ok := refs[f.FileNum]; ok && !f.VlogRefsKnown {
			f.VlogRefs, f.VlogRefsKnown = r, true
		}
	})
	v.live, v.liveUnknown = computeLive(v)
	vs.needRotation = true
}

// Current returns the current version. The caller must hold Options.Mu, and
// must Ref the version to use it after releasing Mu.
func (vs *VersionSet) Current() *Version { return vs.current }

// NewFileNum allocates a file number. Safe without locks.
func (vs *VersionSet) NewFileNum() base.FileNum {
	return base.FileNum(vs.nextFileNum.Add(1) - 1)
}

// NextFileNum returns the next file number that NewFileNum will hand out.
func (vs *VersionSet) NextFileNum() base.FileNum { return base.FileNum(vs.nextFileNum.Load()) }

// MarkFileNumUsed makes sure num is never handed out again.
func (vs *VersionSet) MarkFileNumUsed(num base.FileNum) {
	for {
		cur := vs.nextFileNum.Load()
		if uint64(num) < cur || vs.nextFileNum.CompareAndSwap(cur, uint64(num)+1) {
			return
		}
	}
}

// LogNum returns the number of the oldest WAL recovery needs. Mu held.
func (vs *VersionSet) LogNum() base.FileNum { return vs.logNum }

// LastSeq returns the largest sequence number recorded in the manifest. Mu
// held.
func (vs *VersionSet) LastSeq() base.SeqNum { return vs.lastSeq }

// ManifestNum returns the number of the live manifest.
func (vs *VersionSet) ManifestNum() base.FileNum { return vs.manifestNum }

// LogAndApply persists ve in the manifest and installs the resulting
// version as current. Options.Mu must be held on entry; it is released while
// the manifest is written and synced and held again on return. Concurrent
// calls are serialised.
//
// On error the current version is unchanged, and the next call starts a new
// manifest (the failed one may hold a partial record).
func (vs *VersionSet) LogAndApply(ve *VersionEdit) error {
	for vs.writing {
		vs.cond.Wait()
	}
	vs.writing = true
	defer func() {
		vs.writing = false
		vs.cond.Broadcast()
	}()

	if ve.HasLogNum && ve.LogNum < vs.logNum {
		return fmt.Errorf("strata: version edit moves the log number back from %s to %s", vs.logNum, ve.LogNum)
	}
	if ve.HasLastSeq && ve.LastSeq < vs.lastSeq {
		ve.LastSeq = vs.lastSeq
	}
	ve.SetNextFileNum(vs.NextFileNum())
	newV, err := Apply(vs.current, ve)
	if err != nil {
		return fmt.Errorf("strata: cannot apply version edit: %w", err)
	}
	logNum, lastSeq := vs.logNum, vs.lastSeq
	if ve.HasLogNum {
		logNum = ve.LogNum
	}
	if ve.HasLastSeq {
		lastSeq = ve.LastSeq
	}

	vs.opts.Mu.Unlock()
	if vs.needRotation || vs.manifest == nil || vs.manifest.Size() >= vs.opts.MaxManifestSize {
		err = vs.rotateWith(newV, logNum, lastSeq)
	} else {
		vs.scratch = ve.Encode(vs.scratch[:0])
		if _, err = vs.manifest.WriteRecord(vs.scratch); err == nil {
			err = vs.manifest.Sync()
		}
		if err != nil {
			vs.needRotation = true
		}
	}
	vs.opts.Mu.Lock()
	if err != nil {
		// Release the references Apply took on the files of the version
		// that will never be installed. onZero is not run: the files are
		// still in the current version or (new outputs) owned by the caller.
		newV.onZero = nil
		newV.Ref()
		newV.Unref()
		return err
	}
	vs.logNum, vs.lastSeq = logNum, lastSeq
	old := vs.current
	newV.Ref()
	vs.current = newV
	if old != nil {
		old.Unref()
	}
	return nil
}

func (vs *VersionSet) rotate(v *Version) error { return vs.rotateWith(v, vs.logNum, vs.lastSeq) }

// rotateWith writes a new manifest holding a snapshot of v, switches CURRENT
// to it and removes the previous manifest.
func (vs *VersionSet) rotateWith(v *Version, logNum base.FileNum, lastSeq base.SeqNum) error {
	fs, dir := vs.opts.FS, vs.opts.Dirname
	num := vs.NewFileNum()
	w, err := WriteSnapshot(fs, dir, num, v, logNum, lastSeq, vs.NextFileNum())
	if err != nil {
		vs.needRotation = true
		return err
	}
	if err = SetCurrent(fs, dir, num, vs.NewFileNum()); err != nil {
		// CURRENT may already name the new manifest (the rename happened
		// but the directory sync failed), so keep it; the next open removes
		// whichever manifest CURRENT does not name.
		w.Close()
		vs.needRotation = true
		return err
	}
	if vs.manifest != nil {
		vs.manifest.Close()
	}
	oldNum := vs.manifestNum
	vs.manifest, vs.manifestNum, vs.needRotation = w, num, false
	if oldNum != 0 && oldNum != num {
		// Best effort: a stale manifest is removed again at the next open.
		_ = fs.Remove(fs.PathJoin(dir, base.MakeFilename(base.FileTypeManifest, oldNum)))
	}
	return nil
}

// WriteSnapshot creates MANIFEST-num in dir holding one synced record: a
// snapshot of v with the given log number, last sequence number and next
// file number. It returns the manifest's writer, open for further edits.
// On error nothing is left behind.
func WriteSnapshot(fs vfs.FS, dir string, num base.FileNum, v *Version, logNum base.FileNum, lastSeq base.SeqNum, nextFileNum base.FileNum) (*record.Writer, error) {
	name := fs.PathJoin(dir, base.MakeFilename(base.FileTypeManifest, num))
	f, err := fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("strata: create manifest: %w", err)
	}
	w := record.NewWriter(f)
	snap := v.SnapshotEdit()
	snap.ComparerName = ComparerName
	snap.SetLogNum(logNum)
	snap.SetLastSeq(lastSeq)
	snap.SetNextFileNum(nextFileNum)
	if _, err = w.WriteRecord(snap.Encode(nil)); err == nil {
		err = w.Sync()
	}
	if err != nil {
		w.Close()
		fs.Remove(name)
		return nil, fmt.Errorf("strata: write manifest: %w", err)
	}
	return w, nil
}

// SetCurrent atomically points CURRENT at MANIFEST-manifestNum, using a temp
// file numbered tempNum, and syncs the directory.
func SetCurrent(fs vfs.FS, dir string, manifestNum, tempNum base.FileNum) error {
	tmp := fs.PathJoin(dir, base.MakeFilename(base.FileTypeTemp, tempNum))
	f, err := fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("strata: create CURRENT: %w", err)
	}
	_, err = f.Write([]byte(base.MakeFilename(base.FileTypeManifest, manifestNum) + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, base.MakeFilename(base.FileTypeCurrent, 0)))
	}
	if err == nil {
		err = SyncDir(fs, dir)
	}
	if err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("strata: set CURRENT: %w", err)
	}
	return nil
}

// SyncDir makes the creations, renames and removals in dir durable.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes the manifest file. Mu need not be held, but no LogAndApply
// may run concurrently.
func (vs *VersionSet) Close() error {
	if vs.manifest == nil {
		return nil
	}
	err := vs.manifest.Close()
	vs.manifest = nil
	return err
}
