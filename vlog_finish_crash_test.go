package strata

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestCrashWhileFinishingValueLog: the power goes while the value log
// written at commit is finished (its footer written, the sync not done),
// by a Flush or by Close. A crash that keeps the footer but not every
// page before it (torn writes, zeroed pages) left a file that recovery
// took for finished and then refused as corrupt: the database would not
// open, its acknowledged Sync write out of reach. Recovery now adopts
// such a file as unfinished, cut where its valid records end; every
// crashed state opens, holds the Sync write, scans, and opens again.
func TestCrashWhileFinishingValueLog(t *testing.T) {
	for _, op := range []string{"flush", "close"} {
		t.Run(op, func(t *testing.T) {
			fs := newHoldFS(".vlog")
			opts := func(fs vfs.FS) *Options { return &Options{FS: fs, ValueThreshold: 64} }
			db, err := Open("db", opts(fs))
			require.NoError(t, err)
			require.NoError(t, db.Set([]byte("synced"), []byte(strings.Repeat("s", 100)), Sync))
			for i := 0; i < 200; i++ {
				require.NoError(t, db.Set(fmt.Appendf(nil, "k%04d", i), []byte(strings.Repeat("v", 300)), NoSync))
			}
			release := fs.hold()
			done := make(chan error, 1)
			go func() {
				if op == "close" {
					done <- db.Close()
				} else {
					done <- db.Flush()
				}
			}()
			<-fs.entered // finishing the value log: footer written, sync held
			cut := 0
			for i := range 100 {
				o := vfs.CrashOptions{TornWrites: true, ZeroedPages: true, LeakMetadata: op == "close",
					Rand: rand.New(rand.NewPCG(uint64(i), 1))}
				crashed := fs.mem.CrashClone(o)
				for reopen := range 2 {
					c, err := Open("db", opts(crashed))
					require.NoError(t, err, "crash %d, open %d", i, reopen)
					v, err := c.Get([]byte("synced"))
					require.NoError(t, err, "crash %d, open %d: the Sync write", i, reopen)
					require.Equal(t, strings.Repeat("s", 100), string(v))
					got, err := readAll(t, c)
					require.NoError(t, err, "crash %d, open %d: scan", i, reopen)
					if len(got) < 201 {
						cut++
					}
					require.NoError(t, c.Close())
				}
			}
			release()
			require.NoError(t, <-done)
			if op != "close" {
				require.NoError(t, db.Close())
			}
			t.Logf("%d of 200 opens found writes cut by the crash", cut)
		})
	}
}
