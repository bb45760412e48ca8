package compaction

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata files with what the code does now")

// A testdata file is a sequence of commands, each with its input and the
// output it is expected to produce, in the manner of Pebble's datadriven
// tests:
//
//	# A comment.
//	command arg=value flag
//	input line
//	input line
//	----
//	expected output line
//	expected output line
//
// A blank line ends a command's output; lines starting with # between
// commands are comments. Running the test with -rewrite replaces every
// expected output with the actual one, so a change of behaviour shows up as
// a diff of the testdata file.

// testCmd is one command of a testdata file.
type testCmd struct {
	pos   string // file:line of the command
	name  string
	args  []testArg
	input string
}

type testArg struct{ key, value string }

// arg returns the value of the argument key (key=value, or "" for a bare
// key) and whether it was given.
func (c *testCmd) arg(key string) (string, bool) {
	for _, a := range c.args {
		if a.key == key {
			return a.value, true
		}
	}
	return "", false
}

// runTestdata runs every command of the file at path through run and
// compares the output with the expected one.
func runTestdata(t *testing.T, path string, run func(t *testing.T, c *testCmd) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var out strings.Builder // the file as rewritten
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		c := &testCmd{pos: fmt.Sprintf("%s:%d", path, i+1)}
		fields := strings.Fields(line)
		c.name = fields[0]
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			c.args = append(c.args, testArg{k, v})
		}
		out.WriteString(line + "\n")
		i++
		var input []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
			out.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			t.Fatalf("%s: %s has no ---- line", c.pos, c.name)
		}
		out.WriteString("----\n")
		i++
		var want []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want = append(want, lines[i])
		}
		c.input = strings.Join(input, "\n")

		got := strings.TrimRight(run(t, c), "\n")
		if strings.Contains(got, "\n\n") || strings.HasPrefix(got, "\n") {
			t.Fatalf("%s: output has a blank line, which the file format cannot hold:\n%s", c.pos, got)
		}
		if got != "" {
			out.WriteString(got + "\n")
		}
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %s\n%s\nwant:\n%s\ngot:\n%s", c.pos, line, c.input, strings.Join(want, "\n"), got)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
