package tool

import (
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/vfs"
)

// slowFS is the stress run's filesystem under crashtest: it reports the
// creation, first write and syncs of tables, value logs and manifests as
// events (the crashtest parent kills the process on them), and with slow
// set it sleeps a little in those writes and syncs, so that the windows in
// which a flush, a compaction, a garbage collection or a value-log write
// is half done are wide enough for a kill to land in.
type slowFS struct {
	vfs.FS
	events func(string) // nil: no events
	slow   bool
	seed   uint64

	mu  sync.Mutex
	rng *rand.Rand
}

// Unwrap lets the engine lock the directory through the wrapper.
func (fs *slowFS) Unwrap() vfs.FS { return fs.FS }

// kindOf names the kind of file path: "sst", "vlog", "manifest",
// "current" (the temporary file that becomes CURRENT) or "" for the rest.
func kindOf(path string) string {
	switch {
	case strings.HasSuffix(path, ".sst"):
		return "sst"
	case strings.HasSuffix(path, ".vlog"):
		return "vlog"
	case strings.Contains(path, "MANIFEST-"):
		return "manifest"
	case strings.HasSuffix(path, ".tmp"):
		return "current"
	}
	return ""
}

func (fs *slowFS) event(name string) {
	if fs.events != nil {
		fs.events(name)
	}
}

// pause sleeps up to max, one time in every chance.
func (fs *slowFS) pause(chance int, max time.Duration) {
	if !fs.slow {
		return
	}
	fs.mu.Lock()
	if fs.rng == nil {
		fs.rng = rand.New(rand.NewPCG(fs.seed, 0x51))
	}
	d := time.Duration(0)
	if fs.rng.IntN(chance) == 0 {
		d = time.Duration(fs.rng.Int64N(int64(max)))
	}
	fs.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
}

func (fs *slowFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	k := kindOf(name)
	if k == "" {
		return f, nil
	}
	fs.event("create-" + k)
	return &slowFile{File: f, fs: fs, kind: k}, nil
}

func (fs *slowFS) Rename(oldname, newname string) error {
	if k := kindOf(oldname); k != "" {
		fs.event("rename-" + k)
		fs.pause(2, 2*time.Millisecond)
	}
	return fs.FS.Rename(oldname, newname)
}

func (fs *slowFS) Remove(name string) error {
	if k := kindOf(name); k != "" {
		fs.event("remove-" + k)
	}
	return fs.FS.Remove(name)
}

type slowFile struct {
	vfs.File
	fs     *slowFS
	kind   string
	writes int
}

func (f *slowFile) Write(p []byte) (int, error) {
	f.writes++
	if f.writes == 1 {
		f.fs.event("write-" + f.kind)
	}
	// Value logs written at commit are written by the commit leader: a
	// rarer, shorter pause keeps the foreground moving.
	if f.kind == "vlog" {
		f.fs.pause(8, time.Millisecond)
	} else {
		f.fs.pause(3, 2*time.Millisecond)
	}
	return f.File.Write(p)
}

func (f *slowFile) Sync() error {
	f.fs.event("sync-" + f.kind)
	f.fs.pause(2, 3*time.Millisecond)
	return f.File.Sync()
}

// stressListener reports flushes, compactions and garbage collection as
// events, and with slow set pauses at their start.
func stressListener(events func(string), slow bool) *strata.EventListener {
	if events == nil && !slow {
		return nil
	}
	emit := func(name string) {
		if events != nil {
			events(name)
		}
	}
	pause := func() {
		if slow {
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
		}
	}
	return &strata.EventListener{
		FlushBegin:      func(strata.FlushInfo) { emit("flush-begin"); pause() },
		FlushEnd:        func(strata.FlushInfo) { emit("flush-end") },
		CompactionBegin: func(strata.CompactionInfo) { emit("compaction-begin"); pause() },
		CompactionEnd:   func(strata.CompactionInfo) { emit("compaction-end") },
		GCDecision:      func(strata.GCInfo) { emit("gc-decision") },
		ValueLogDeleted: func(strata.ValueLogDeleteInfo) { emit("vlog-deleted") },
		TableDeleted:    func(strata.TableDeleteInfo) { emit("table-deleted") },
		BackgroundError: func(err error) { emit("background-error " + err.Error()) },
	}
}
