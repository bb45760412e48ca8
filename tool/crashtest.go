package tool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/checkpoint"
	"github.com/strata-db/strata/vfs"
)

// CrashConfig configures a crash test.
type CrashConfig struct {
	// Dir holds the database (Dir/db), its expected state (Dir/expected)
	// and, after a failure, a copy of the failing database.
	Dir      string
	Duration time.Duration // stop after this long (0: no limit)
	Cycles   int           // stop after this many kills (0: no limit)
	Seed     uint64        // 0: from the clock
	Keys     int           // stress key space
	Threads  int           // stress workers
	// Shared keeps the database's shared files in a local object store
	// (Dir/store; see stress_store.go), kills the child between and in
	// its store requests too, and audits the store after every kill and,
	// once the test ends, for leaks.
	Shared bool
	// NoMerges leaves merge operands out of the stress child's writes
	// (see stressMerger).
	NoMerges bool
	// KeepBefore copies the database and its expected state to
	// DIR/db.before before each child starts, so that a child that fails
	// at open (its recovery has changed the database by then) can be run
	// again on what it found.
	KeepBefore bool
	// StressArgs start the stress command (see Tool.StressArgs).
	StressArgs []string
	Out        io.Writer
}

// CrashStats are what a crash test did.
type CrashStats struct {
	Cycles int
	// Kills counts the kills by what they aimed at.
	Kills map[string]int
	// Exited counts children that ended before the kill (a short run).
	Exited int
	// KeysVerified counts key checks after kills (every key, every
	// cycle, by the parent's read-only verification).
	KeysVerified int64
	// Writes and SyncWrites are the writes the children had
	// acknowledged, over the whole test.
	Writes, SyncWrites uint64
	Failures           []string
}

// killTargets are what a kill aims at: a moment in the run, or the event
// lines of the child (see slowFS and stressListener), after which the
// child is killed within a few milliseconds, while the work the event
// began is under way.
var killTargets = []struct {
	name   string
	events []string
}{
	{"time", nil},
	{"flush", []string{"flush-begin", "create-sst"}},
	{"compaction", []string{"compaction-begin"}},
	{"vlog-write", []string{"write-vlog", "create-vlog", "sync-vlog"}},
	{"table-write", []string{"write-sst", "sync-sst"}},
	{"manifest", []string{"create-manifest", "sync-manifest", "rename-current", "create-current"}},
	{"gc", []string{"gc-decision", "vlog-deleted", "remove-vlog"}},
	{"deletion", []string{"table-deleted", "remove-sst"}},
	// With --shared only: a request to the store that writes.
	{"store", []string{"store-put", "store-delete", "store-compose"}},
}

// crashtestHelp is printed before the flags by crashtest --help.
const crashtestHelp = `strata crashtest runs the stress workload in a child process, kills it
with SIGKILL at random moments and inside flushes, compactions, value-log
writes, manifest updates and garbage collection, and after every kill
checks the restarted database against the writes the child had
acknowledged.

A kill ends the process, not the machine: the operating system's page
cache survives it, so every write the process made reaches the disk,
synced or not. This tests recovery from a process crash. Power loss,
which drops unsynced data, tears writes, zeroes pages and leaks directory
changes, is tested on the crash-simulating filesystem by the engine's own
tests (go test -run 'TestCrashRecovery|TestReplay' in the repository).

With --shared the database keeps its lower levels and value logs in a
local object store (DIR/store) with a cache far smaller than the data,
and checkpoints into it by reference, opening each checkpoint as an
instance that it reads and destroys; kills also land between and in the
store's requests. After every kill check --store audits the store: no
object the database, the instance or a retained checkpoint refers to
may be missing or damaged. At the end the database is reopened and
checkpointed, a sweep runs, and the store must hold nothing stray or
unreferenced.

Flags:
`

func (t *Tool) runCrashtest(args []string) int {
	fs := t.newFlags("crashtest")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), crashtestHelp)
		fs.PrintDefaults()
	}
	var c CrashConfig
	fs.StringVar(&c.Dir, "dir", "", "working directory (created)")
	fs.DurationVar(&c.Duration, "duration", 0, "how long to run (0: until --cycles)")
	fs.IntVar(&c.Cycles, "cycles", 0, "kills (0: until --duration)")
	fs.Uint64Var(&c.Seed, "seed", 0, "random seed (0: from the clock)")
	fs.IntVar(&c.Keys, "keys", 10000, "stress key space")
	fs.IntVar(&c.Threads, "threads", 4, "stress workers")
	fs.BoolVar(&c.Shared, "shared", false, "keep shared files in a local object store (DIR/store), kill in its requests, audit it")
	fs.BoolVar(&c.NoMerges, "no-merges", false, "leave merge operands out of the stress child's writes")
	fs.BoolVar(&c.KeepBefore, "keep-before", false, "copy the database to DIR/db.before before each child (to rerun a failure at open)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return t.usageError("crashtest", err)
	}
	if c.Dir == "" {
		return t.usageError("crashtest", errors.New("--dir is required"))
	}
	if c.Duration == 0 && c.Cycles == 0 {
		c.Cycles = 10
	}
	c.StressArgs = t.StressArgs
	if len(c.StressArgs) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return t.fail("crashtest", err)
		}
		c.StressArgs = []string{exe}
	}
	c.Out = t.Stdout
	st, err := Crashtest(c)
	st.write(t.Stdout)
	if err != nil {
		return t.fail("crashtest", err)
	}
	return 0
}

func (s *CrashStats) write(w io.Writer) {
	var kills []string
	for _, k := range killTargets {
		if n := s.Kills[k.name]; n > 0 {
			kills = append(kills, fmt.Sprintf("%s %d", k.name, n))
		}
	}
	fmt.Fprintf(w, "crashtest: %d cycles (kills: %s; %d children ended before their kill), %d key checks after kills, %d writes acknowledged (%d with Sync), %d failures\n",
		s.Cycles, strings.Join(kills, ", "), s.Exited, s.KeysVerified, s.Writes, s.SyncWrites, len(s.Failures))
	for _, f := range s.Failures {
		fmt.Fprintf(w, "FAILURE: %s\n", f)
	}
}

// Crashtest runs stress in a child process again and again, killing it
// with SIGKILL at random moments or just after the start of a flush, a
// compaction, a value-log or table write, a manifest change, a garbage
// collection or a file deletion (the child widens those windows, see
// slowFS). After each kill it runs Check on the database and verifies
// every key against the expected state through a read-only open: every
// write acknowledged with Sync (or made durable by a later one) is there,
// and no value appears that was never written. The next child verifies
// the database again, through a read-write open, before it writes. The
// first failure stops the test, leaving a copy of the database beside it.
func Crashtest(c CrashConfig) (CrashStats, error) {
	st := CrashStats{Kills: make(map[string]int)}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Keys <= 0 {
		c.Keys = 10000
	}
	if c.Threads <= 0 {
		c.Threads = 4
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return st, err
	}
	dbDir := filepath.Join(c.Dir, "db")
	expected := filepath.Join(c.Dir, "expected")
	storeDir := ""
	targets := killTargets[:len(killTargets)-1]
	if c.Shared {
		storeDir, targets = filepath.Join(c.Dir, "store"), killTargets
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0xc4a5))
	fmt.Fprintf(c.Out, "crashtest: seed %d, directory %s\n", c.Seed, c.Dir)
	start := time.Now()
	for {
		if c.Cycles > 0 && st.Cycles >= c.Cycles {
			break
		}
		if c.Duration > 0 && time.Since(start) >= c.Duration {
			break
		}
		target := targets[rng.IntN(len(targets))]
		childSeed := rng.Uint64() | 1
		if c.KeepBefore {
			// The copy a failure at the child's open needs: by the time
			// it fails, its recovery has rewritten the database.
			os.RemoveAll(dbDir + ".before")
			copyDir(dbDir, dbDir+".before")
			copyFile(expected, dbDir+".before.expected")
		}
		killed, out, err := runChild(c, dbDir, expected, storeDir, childSeed, target.events, rng)
		st.Cycles++
		if killed {
			st.Kills[target.name]++
		} else {
			st.Exited++
		}
		if err != nil {
			st.Failures = append(st.Failures, fmt.Sprintf("cycle %d (seed %d, kill at %s): %v\n%s", st.Cycles, childSeed, target.name, err, out))
			break
		}
		if problems := verifyAfterKill(dbDir, expected, storeDir, &st); len(problems) > 0 {
			st.Failures = append(st.Failures, fmt.Sprintf("cycle %d (seed %d, kill at %s): %s\nlast output of the child:\n%s",
				st.Cycles, childSeed, target.name, strings.Join(problems, "\n"), out))
			break
		}
		if st.Cycles%25 == 0 {
			fmt.Fprintf(c.Out, "crashtest: %d cycles, %s\n", st.Cycles, time.Since(start).Round(time.Second))
		}
	}
	if c.Shared && len(st.Failures) == 0 {
		if problems := checkStoreClean(dbDir, storeDir); len(problems) > 0 {
			st.Failures = append(st.Failures, "at the end: "+strings.Join(problems, "\n"))
		}
	}
	if e, _, err := openExpected(expected, c.Keys); err == nil {
		st.Writes, st.SyncWrites = e.acks().Load(), e.syncAcks().Load()
		e.close()
	}
	if len(st.Failures) > 0 {
		failed := fmt.Sprintf("%s.failed-%d", dbDir, st.Cycles)
		copyDir(dbDir, failed)
		copyFile(expected, failed+".expected")
		if c.Shared {
			fmt.Fprintf(c.Out, "crashtest: the store is in %s\n", storeDir)
		}
		return st, fmt.Errorf("failure in cycle %d (database copied to %s)", st.Cycles, failed)
	}
	return st, nil
}

// runChild runs one stress child and kills it when the target says. It
// returns whether the child was killed (rather than ending by itself),
// the end of its output, and an error if it failed.
func runChild(c CrashConfig, dbDir, expected, storeDir string, seed uint64, events []string, rng *rand.Rand) (bool, string, error) {
	args := append(append([]string(nil), c.StressArgs[1:]...), "stress", "--dir", dbDir, "--expected", expected,
		"--seed", fmt.Sprint(seed), "--keys", fmt.Sprint(c.Keys), "--threads", fmt.Sprint(c.Threads),
		"--duration", "1h", "--slow-io")
	if storeDir != "" {
		args = append(args, "--store", storeDir)
	}
	if c.NoMerges {
		args = append(args, "--no-merges")
	}
	if events != nil {
		args = append(args, "--events")
	}
	cmd := exec.Command(c.StressArgs[0], args...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return false, "", err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return false, "", err
	}
	tail := &tailBuffer{}
	ready := make(chan struct{})
	hit := make(chan struct{}, 1)
	want := 1 + rng.IntN(3) // kill at the first, second or third matching event
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		seen, readyClosed := 0, false
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "event ") {
				tail.add(line)
			}
			if !readyClosed && strings.HasPrefix(line, "ready:") {
				close(ready)
				readyClosed = true
			}
			if readyClosed && events != nil {
				name, _, _ := strings.Cut(strings.TrimPrefix(line, "event "), " ")
				for _, e := range events {
					if name == e {
						if seen++; seen == want {
							hit <- struct{}{}
						}
					}
				}
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	done := make(chan error, 1)
	go func() {
		wg.Wait()
		done <- cmd.Wait()
	}()

	kill := func() {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	// Wait for the child to have verified the database.
	select {
	case <-ready:
	case err := <-done:
		return false, tail.String(), fmt.Errorf("the child ended before it was ready: %v", err)
	case <-time.After(2 * time.Minute):
		kill()
		<-done
		return true, tail.String(), errors.New("the child did not become ready within 2 minutes")
	}
	var timer <-chan time.Time
	if events == nil {
		timer = time.After(time.Duration(50+rng.IntN(2500)) * time.Millisecond)
	} else {
		// An event that never comes (nothing to collect, say) ends in a
		// kill at a random moment all the same.
		timer = time.After(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	}
	select {
	case <-hit:
		// Within the window the event opened: a little later, or at once.
		if d := rng.IntN(4); d > 0 {
			time.Sleep(time.Duration(rng.IntN(1000*d)) * time.Microsecond)
		}
		kill()
	case <-timer:
		kill()
	case err := <-done:
		return false, tail.String(), fmt.Errorf("the child ended by itself: %v", err)
	}
	err = <-done
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, tail.String(), nil
		}
	}
	return false, tail.String(), fmt.Errorf("the child ended with %v before the kill", err)
}

// verifyAfterKill checks the database after a kill: Check passes (with a
// store: its audit, verifySharedAfterKill), and every key is in a state
// the expected state allows.
func verifyAfterKill(dbDir, expected, storeDir string, st *CrashStats) []string {
	var problems []string
	o := &strata.Options{ReadOnly: true, Merger: stressMerger{}}
	if storeDir != "" {
		store, err := checkpoint.NewLocalStore(storeDir)
		if err != nil {
			return []string{err.Error()}
		}
		o.SharedStore = store
		problems = verifySharedAfterKill(dbDir, store)
	} else if rep := Check(vfs.Default, dbDir, o); !rep.OK() {
		for _, p := range rep.Problems {
			problems = append(problems, "check: "+p)
		}
	}
	e, _, err := openExpected(expected, 0)
	if err != nil {
		return append(problems, err.Error())
	}
	defer e.close()
	db, err := strata.Open(dbDir, o)
	if err != nil {
		return append(problems, fmt.Sprintf("read-only open: %v", err))
	}
	defer db.Close()
	res := verifyDB(db, e)
	st.KeysVerified += int64(res.checked)
	for _, f := range res.failures {
		problems = append(problems, "verify: "+f)
	}
	return problems
}

// tailBuffer keeps the last lines of a child's output.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *tailBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 40 {
		b.lines = b.lines[len(b.lines)-40:]
	}
	b.mu.Unlock()
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// copyDir copies the files of src into dst (best effort: for the
// post-mortem of a failure).
func copyDir(src, dst string) {
	os.MkdirAll(dst, 0o755)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if !e.IsDir() {
			copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		}
	}
}

func copyFile(src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		return
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return
	}
	io.Copy(out, in)
	out.Close()
}
