package strata

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata/vfs"
)

// BenchmarkIngestWriteLatency measures what an Ingest costs the writers
// that run beside it: one goroutine writes 1 KiB values (NoSync, keys
// outside the ingested range) at a steady 20,000 writes a second while
// Ingest adds external tables of 4 KiB values, STRATA_INGEST_MIB of them
// in all (default 256; 1024 for the figure the README quotes). A write's
// latency counts from the moment it was due, so a stall shows in every
// write it held back, not only in the one that waited (no coordinated
// omission). It reports the writes' p50, p99 and maximum latency while
// Ingest ran, the same figures of a window of equal length without it,
// and the Ingest's own time. Run it alone, once:
//
//	STRATA_INGEST_MIB=1024 go test -run '^$' -bench IngestWriteLatency -benchtime 1x
func BenchmarkIngestWriteLatency(b *testing.B) {
	mib := 256
	if s := os.Getenv("STRATA_INGEST_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("STRATA_INGEST_MIB=%q", s)
		}
		mib = n
	}
	const valueSize = 4096
	const tables = 4
	perTable := mib << 20 / valueSize / tables
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		db := openBench(b, &Options{FS: vfs.Default})
		// Some state in the DB and in its memtable first.
		value := make([]byte, 1024)
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		var kb [16]byte
		for j := 0; j < 100_000; j++ {
			if err := db.Set(writerKey(kb[:], uint64(j)), value, NoSync); err != nil {
				b.Fatal(err)
			}
		}
		paths := make([]string, tables)
		big := make([]byte, valueSize)
		for t := range paths {
			paths[t] = filepath.Join(dir, fmt.Sprintf("ext%d.sst", t))
			w, err := NewTableWriter(paths[t], nil)
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j < perTable; j++ {
				binary.BigEndian.PutUint64(big, rng.Uint64())
				if err := w.Set([]byte(fmt.Sprintf("ingest-%d-%09d", t, j)), big); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}

		// The writer runs throughout; each write's latency goes to the
		// window that is open when it started.
		var window atomic.Int32 // 0: none, 1: baseline, 2: ingest
		var lat [3][]time.Duration
		stop := make(chan struct{})
		done := make(chan error)
		const rate = 20_000
		go func() {
			var kb [16]byte
			begin := time.Now()
			for j := uint64(0); ; j++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				due := begin.Add(time.Duration(j) * time.Second / rate)
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				w := window.Load()
				if err := db.Set(writerKey(kb[:], j+1<<32), value, NoSync); err != nil {
					done <- err
					return
				}
				lat[w] = append(lat[w], time.Since(due))
			}
		}()
		time.Sleep(100 * time.Millisecond)
		b.StartTimer()
		start := time.Now()
		window.Store(2)
		if err := db.Ingest(paths); err != nil {
			b.Fatal(err)
		}
		window.Store(0)
		took := time.Since(start)
		b.StopTimer()
		window.Store(1)
		time.Sleep(took)
		window.Store(0)
		close(stop)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(took.Seconds(), "ingest-s")
		for _, w := range []struct {
			name string
			lat  []time.Duration
		}{{"during", lat[2]}, {"without", lat[1]}} {
			slices.Sort(w.lat)
			if len(w.lat) == 0 {
				continue
			}
			q := func(p float64) float64 {
				return float64(w.lat[min(len(w.lat)-1, int(p*float64(len(w.lat))))].Microseconds())
			}
			b.ReportMetric(q(0.5), w.name+"-p50-us")
			b.ReportMetric(q(0.99), w.name+"-p99-us")
			b.ReportMetric(float64(w.lat[len(w.lat)-1].Microseconds()), w.name+"-max-us")
			b.ReportMetric(float64(len(w.lat))/took.Seconds(), w.name+"-writes/s")
		}
		b.StartTimer()
	}
}

func writerKey(buf []byte, i uint64) []byte {
	copy(buf, "w")
	binary.BigEndian.PutUint64(buf[1:9], i*0x9e3779b97f4a7c15)
	return buf[:9]
}
