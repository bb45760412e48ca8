package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQuickstart runs the program in an empty directory and checks what
// it prints.
func TestQuickstart(t *testing.T) {
	t.Chdir(t.TempDir())
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	main()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	require.Equal(t, "bob joined, <nil>\nuser:alice = joined\nuser:bob = joined\nuser:carol = joined\n", <-done)
}

// TestReadmeShowsQuickstart: README's first Go block is this program as it
// is, from its package clause on, followed by what it prints.
func TestReadmeShowsQuickstart(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	code := string(src[strings.Index(string(src), "package main"):])
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	block := "```go\n" + code + "```\n"
	i := strings.Index(string(readme), "```go\n")
	require.True(t, i >= 0 && strings.HasPrefix(string(readme[i:]), block),
		"README's first Go block is not internal/quickstart/main.go from its package clause on; it should be:\n%s", block)
}
