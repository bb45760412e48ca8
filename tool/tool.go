package tool

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/vfs"
)

// Tool runs the commands. The zero value is not ready: use New.
type Tool struct {
	// FS is the filesystem databases and files are read through. Default:
	// vfs.Default.
	FS vfs.FS
	// Stdout and Stderr receive the commands' output and diagnostics.
	// Default: os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// Options, if set, returns the options databases are opened with (an
	// embedding program's cache, policies, ...); the commands set FS and,
	// where they only read, ReadOnly on top.
	Options func() *strata.Options
	// StressArgs is the command line that starts this tool's stress
	// command in a child process, for crashtest: the program and the
	// arguments that lead to the tool's commands. Default: this
	// executable, which must then dispatch its first argument to Run (as
	// cmd/strata does); a program that mounts the commands under a
	// subcommand sets it to {program, subcommand}.
	StressArgs []string

	// merger is the --merger global flag's choice.
	merger strata.Merger
}

// New returns a Tool with the defaults.
func New() *Tool {
	return &Tool{FS: vfs.Default, Stdout: os.Stdout, Stderr: os.Stderr}
}

// Command is one command of the tool.
type Command struct {
	Name  string
	Usage string // the arguments, as in "DIR [--limit N]"
	Short string // one line
	// Run runs the command with the arguments after its name and returns
	// its exit status.
	Run func(args []string) int
}

// Commands returns the tool's commands.
func (t *Tool) Commands() []*Command {
	return []*Command{
		{Name: "check", Usage: "DIR | --store DIR_OR_URL [DBDIR...] [--quick] [--fix] [--all]", Short: "verify every table block, referenced value-log record, the manifest, the WALs and the garbage ledger; with --store, audit a store: every object a retained checkpoint or a given database uses is there whole, and its reference markers", Run: t.runCheck},
		{Name: "dump", Usage: "sst|vlog|manifest|wal FILE [--full] [--hex]", Short: "print a file, with offsets", Run: t.runDump},
		{Name: "lsm", Usage: "DIR [--verbose] [--hex]", Short: "print the levels: tables, key ranges, sizes, value-log references", Run: t.runLSM},
		{Name: "scan", Usage: "DIR [--start KEY] [--end KEY] [--limit N] [--hex]", Short: "print the keys and values in [start, end)", Run: t.runScan},
		{Name: "get", Usage: "DIR KEY [--hex]", Short: "print the value of a key", Run: t.runGet},
		{Name: "gc", Usage: "DIR [--policy NAME]", Short: "print the garbage ledger and what the policy would decide next", Run: t.runGC},
		{Name: "floor", Usage: "DIR [DIR...] [--reads N] [--rounds N] [--value-size N] [--rate R]", Short: "measure the least a point read of a separated value costs on this machine for each database's files (a table line, then the value it leads to), and what a read rate measured on the first allows on the others", Run: t.runFloor},
		{Name: "stress", Usage: "--dir DIR [--expected FILE] [--duration D] [--ops N] [--seed N] [--threads N]", Short: "random concurrent workload checked against an expected state that survives a kill", Run: t.runStress},
		{Name: "crashtest", Usage: "--dir DIR [--duration D] [--cycles N] [--seed N]", Short: "run stress in a child, kill it with SIGKILL at random moments, verify every restart (a process crash, not a power loss: see --help)", Run: t.runCrashtest},
	}
}

// Run runs the command args[0] with the rest of args and returns the exit
// status: 0 on success, 1 when the command found a problem or failed, 2
// on a usage error.
func (t *Tool) Run(args []string) int {
	t.defaults()
	// Global flags, before the command.
	for len(args) > 0 && strings.HasPrefix(args[0], "--merger") {
		name, ok := strings.CutPrefix(args[0], "--merger=")
		if !ok {
			if len(args) < 2 {
				fmt.Fprintln(t.Stderr, "strata: --merger needs a name (list or counter)")
				return 2
			}
			name, args = args[1], args[1:]
		}
		args = args[1:]
		switch name {
		case "list":
			t.merger = strata.ListAppend
		case "counter":
			t.merger = strata.Counter
		default:
			fmt.Fprintf(t.Stderr, "strata: unknown merger %q (list or counter)\n", name)
			return 2
		}
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		t.usage(t.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range t.Commands() {
		if c.Name == args[0] {
			return c.Run(args[1:])
		}
	}
	fmt.Fprintf(t.Stderr, "strata: unknown command %q\n", args[0])
	t.usage(t.Stderr)
	return 2
}

func (t *Tool) defaults() {
	if t.FS == nil {
		t.FS = vfs.Default
	}
	if t.Stdout == nil {
		t.Stdout = os.Stdout
	}
	if t.Stderr == nil {
		t.Stderr = os.Stderr
	}
}

func (t *Tool) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strata [--merger list|counter] COMMAND [ARGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "  --merger   the merge operator of a database written with merges (strata.ListAppend or strata.Counter;")
	fmt.Fprintln(w, "             default: the built-in one the database records)")
	fmt.Fprintln(w)
	for _, c := range t.Commands() {
		fmt.Fprintf(w, "  %-10s %s\n  %-10s   %s\n", c.Name, c.Usage, "", c.Short)
	}
}

// options returns the options to open a database with.
func (t *Tool) options(readOnly bool) *strata.Options {
	var o strata.Options
	if t.Options != nil {
		if u := t.Options(); u != nil {
			o = *u
		}
	}
	o.FS = t.FS
	if o.Merger == nil {
		o.Merger = t.merger
	}
	if readOnly {
		o.ReadOnly = true
	}
	return &o
}

// openReadOnly opens the database in dir read-only, with the built-in
// merger its manifest records when no other is chosen.
func (t *Tool) openReadOnly(dir string) (*strata.DB, error) {
	o := t.options(true)
	if o.Merger == nil {
		o.Merger = recordedMerger(o.FS, dir)
	}
	return strata.Open(dir, o)
}

// recordedMerger returns the built-in merger (or stress's) whose name
// the manifest of the database in dir records; nil when it records none
// or another, or cannot be read (Open then says why).
func recordedMerger(fs vfs.FS, dir string) strata.Merger {
	var mu sync.Mutex
	vs, err := manifest.Load(manifest.Options{FS: fs, Dirname: dir, Mu: &mu})
	if err != nil {
		return nil
	}
	defer vs.Close()
	mu.Lock()
	name := vs.Current().MergerName
	mu.Unlock()
	for _, m := range []strata.Merger{strata.ListAppend, strata.Counter, stressMerger{}} {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// parse parses args with fs, allowing flags before and after the
// positional arguments, and checks their number is within [min, max].
func parse(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || len(pos) > max {
		return nil, fmt.Errorf("wrong number of arguments (%d)", len(pos))
	}
	return pos, nil
}

// newFlags returns a FlagSet for command name whose errors go to the
// tool's stderr.
func (t *Tool) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(t.Stderr)
	return fs
}

// usageError reports a usage error of command name and returns 2.
func (t *Tool) usageError(name string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	i := slices.IndexFunc(t.Commands(), func(c *Command) bool { return c.Name == name })
	fmt.Fprintf(t.Stderr, "strata %s: %v\nusage: strata %s %s\n", name, err, name, t.Commands()[i].Usage)
	return 2
}

// fail reports err of command name and returns 1.
func (t *Tool) fail(name string, err error) int {
	fmt.Fprintf(t.Stderr, "strata %s: %v%s\n", name, err, mergerHint(err))
	return 1
}

// mergerHint is what to add to err, when a read failed because it met a
// merge operand without a merger, to say how to read the database.
func mergerHint(err error) string {
	if !errors.Is(err, strata.ErrNoMerger) {
		return ""
	}
	return " (the database holds merge operands: read it with the merger it was written with, --merger list or --merger counter)"
}

// printable returns b as is when it is printable text, or quoted (or in
// hex) otherwise; long values are cut at max bytes (0: never).
func printable(b []byte, hex bool, max int) string {
	cut := ""
	if max > 0 && len(b) > max {
		cut = fmt.Sprintf("...(%d bytes)", len(b))
		b = b[:max]
	}
	if hex {
		return fmt.Sprintf("%x", b) + cut
	}
	s := string(b)
	for _, r := range s {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return fmt.Sprintf("%q", s) + cut
		}
	}
	if s == "" || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return fmt.Sprintf("%q", s) + cut
	}
	return s + cut
}

// printableKey is printable for a key, quoted also when it holds a space
// or an "=", so that a line "key value" or "key = value" reads one way.
func printableKey(b []byte, hex bool, max int) string {
	s := printable(b, hex, max)
	if !hex && !strings.HasPrefix(s, "\"") && strings.ContainsAny(s, " =") {
		return fmt.Sprintf("%q", b)
	}
	return s
}
