// Command kvbench runs a short write-then-read workload on Strata and
// prints what it measured.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/strata-db/strata"
)

func main() {
	num := flag.Int("num", 200000, "number of keys")
	valueSize := flag.Int("value_size", 100, "value size in bytes")
	dir := flag.String("db", "", "database directory (default: a temporary directory)")
	flag.Parse()
	if err := run(*dir, *num, *valueSize); err != nil {
		fmt.Fprintln(os.Stderr, "kvbench:", err)
		os.Exit(1)
	}
}

func run(dir string, num, valueSize int) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kvbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	db, err := strata.Open(dir, &strata.Options{Compression: "none"})
	if err != nil {
		return err
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	key := func(i uint64) []byte {
		var k [16]byte
		binary.BigEndian.PutUint64(k[:8], i*0x9e3779b97f4a7c15)
		binary.BigEndian.PutUint64(k[8:], i)
		return k[:]
	}
	order := rng.Perm(num)
	start := time.Now()
	for _, i := range order {
		if err := db.Set(key(uint64(i)), value, strata.NoSync); err != nil {
			return err
		}
	}
	if err := db.Flush(); err != nil {
		return err
	}
	fill := time.Since(start)
	start = time.Now()
	for i := 0; i < num; i++ {
		if _, err := db.Get(key(rng.Uint64N(uint64(num)))); err != nil {
			return err
		}
	}
	read := time.Since(start)
	fmt.Printf("fillrandom  %8d ops  %10.0f ops/s  (%d-byte values)\n", num, float64(num)/fill.Seconds(), valueSize)
	fmt.Printf("readrandom  %8d ops  %10.0f ops/s\n", num, float64(num)/read.Seconds())
	fmt.Println()
	fmt.Print(db.Metrics())
	return nil
}
