package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of the S3 store, and of what reaches one (strata check --store
// s3://...), run against a real S3 server that they start on the loopback
// interface: versitygw's POSIX gateway
// (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0; .ci/run
// installs it), found as $STRATA_VERSITYGW or versitygw on PATH. Where it
// is missing or cannot start they skip, saying so, unless
// STRATA_REQUIRE_S3 is set (as CI sets it), when they fail.

// S3AccessKey and S3SecretKey are the credentials of the server
// StartS3Server starts.
const (
	S3AccessKey = "strata-test-access"
	S3SecretKey = "strata-test-secret-0123456789"
)

// StartS3Server starts versitygw on a free loopback port, serving a new
// directory, and returns its endpoint; the server is stopped when t ends.
func StartS3Server(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRATA_VERSITYGW")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("versitygw"); err != nil {
			if os.Getenv("STRATA_REQUIRE_S3") != "" {
				t.Fatal("STRATA_REQUIRE_S3 is set, but versitygw is not on PATH nor in STRATA_VERSITYGW")
			}
			t.Skip("no S3 server to test against: install versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0) or set STRATA_VERSITYGW to its path")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	noErr(t, err)
	addr := l.Addr().String()
	noErr(t, l.Close())
	root := t.TempDir()
	data := filepath.Join(root, "data")
	noErr(t, os.Mkdir(data, 0o755))
	cmd := exec.Command(bin, "--quiet", "--access", S3AccessKey, "--secret", S3SecretKey, "--port", addr, "posix", "--sidecar", filepath.Join(root, "meta"), data)
	noErr(t, os.Mkdir(filepath.Join(root, "meta"), 0o755))
	logf, err := os.Create(filepath.Join(root, "versitygw.log"))
	noErr(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	noErr(t, cmd.Start())
	var exited atomic.Bool
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		exited.Store(true)
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		logf.Close()
	})
	// Wait until it accepts connections.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if exited.Load() || time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(root, "versitygw.log"))
			msg := fmt.Sprintf("the S3 server (%s) did not start on %s: %v\n%s", bin, addr, err, b)
			if os.Getenv("STRATA_REQUIRE_S3") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg + "\n(set STRATA_REQUIRE_S3 to fail instead)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + addr
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
