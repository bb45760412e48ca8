package tool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/vfs"
)

// The floor command measures what a point read of a separated value costs
// at the least on this machine, for the files of a database: one cache line
// of its tables, then the value-log record that line leads to, both at
// random over the live files, mapped as the DB maps them, and nothing else
// (no search, no checksum, no lookup of a file). Every read of a value kept
// out of line makes these two accesses one after the other: the second's
// address is in the first's line. Run on a small database and a large one
// written alike, it shows how much of a read's slowdown with size the
// machine's memory (its caches, TLBs and page walks) imposes on any engine
// that separates values, and so the most a read rate measured on the small
// one can keep on the large one (--rate).

// floorRecordOverhead approximates the bytes a value-log record adds to its
// value (header and checksum): the record is touched whole, as a read does.
const floorRecordOverhead = 32

func (t *Tool) runFloor(args []string) int {
	fs := t.newFlags("floor")
	reads := fs.Int("reads", 1_000_000, "dependent read pairs per round and directory")
	rounds := fs.Int("rounds", 3, "rounds; the directories alternate in each, and each figure is the median of its rounds")
	valueSize := fs.Int("value-size", 1024, "bytes of the value each pair copies out of a value log")
	rate := fs.Float64("rate", 0, "a point-read rate (reads/s) measured on the first DIR: print the most each other DIR can reach when its reads cost the first's plus the floor's difference")
	seed := fs.Uint64("seed", 1, "seed of the random offsets")
	pos, err := parse(fs, args, 1, 16)
	if err == nil && (*reads < 1 || *rounds < 1 || *valueSize < 1 || *rate < 0) {
		err = errors.New("--reads, --rounds and --value-size must be positive, --rate not negative")
	}
	if err != nil {
		return t.usageError("floor", err)
	}
	dirs := make([]*floorFiles, len(pos))
	defer func() {
		for _, d := range dirs {
			d.close()
		}
	}()
	for i, dir := range pos {
		if dirs[i], err = t.mapFloorFiles(dir, *valueSize+floorRecordOverhead); err != nil {
			return t.fail("floor", err)
		}
	}
	ns := make([][]float64, len(dirs))
	dst := make([]byte, *valueSize)
	for r := 0; r < *rounds; r++ {
		for i, d := range dirs {
			v, err := d.pass(*reads, *valueSize, *seed+uint64(r), dst)
			if err != nil {
				return t.fail("floor", err)
			}
			ns[i] = append(ns[i], v)
		}
	}
	writeFloor(t.Stdout, pos, dirs, ns, *valueSize, *rate)
	return 0
}

// writeFloor prints the figures: each directory's files and the median
// (and range) of its rounds' nanoseconds a pair, then each later
// directory against the first.
func writeFloor(w io.Writer, names []string, dirs []*floorFiles, ns [][]float64, valueSize int, rate float64) {
	med := make([]float64, len(ns))
	for i, d := range dirs {
		med[i] = median(ns[i])
		fmt.Fprintf(w, "%s: tables %d (%d MiB), value logs %d (%d MiB)\n", names[i],
			len(d.tables.maps), d.tables.total>>20, len(d.vlogs.maps), d.vlogs.total>>20)
		fmt.Fprintf(w, "  a table line, then a %d-byte value: %.0f ns (rounds %.0f-%.0f), %.0f a second\n",
			valueSize, med[i], slices.Min(ns[i]), slices.Max(ns[i]), 1e9/med[i])
	}
	for i := 1; i < len(dirs); i++ {
		fmt.Fprintf(w, "%s against %s: %+.0f ns a read, floor rate %.2fx\n", names[i], names[0], med[i]-med[0], med[0]/med[i])
		if rate > 0 {
			most := rateAtMost(rate, med[i]-med[0])
			fmt.Fprintf(w, "  a read rate of %.0f/s on %s allows at most %.0f/s here (%.2fx)\n", rate, names[0], most, most/rate)
		}
	}
}

// rateAtMost is the read rate a reader reaching rate (reads a second) where
// the floor is lower reaches at best where each read costs extra
// nanoseconds more: its other work cannot shrink, so its reads take
// 1/rate + extra. An extra of 0 or less leaves rate.
func rateAtMost(rate, extraNS float64) float64 {
	if extraNS <= 0 {
		return rate
	}
	return 1 / (1/rate + extraNS/1e9)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// floorFiles holds the mappings of a database's live tables and value
// logs.
type floorFiles struct {
	tables, vlogs floorSpread
	closers       []vfs.File
}

// floorSpread is a set of mapped files seen as one range of offsets, for
// offsets drawn at random over all their bytes.
type floorSpread struct {
	maps  [][]byte
	ends  []uint64 // ends[i]: the bytes of maps[:i+1]
	total uint64
}

func (s *floorSpread) add(b []byte) {
	s.maps = append(s.maps, b)
	s.total += uint64(len(b))
	s.ends = append(s.ends, s.total)
}

// at maps x (any value) to a file and an offset in it at which n bytes
// fit, uniform over the bytes of the files.
func (s *floorSpread) at(x uint64, n int) ([]byte, int) {
	o := x % s.total
	i := sort.Search(len(s.ends), func(i int) bool { return s.ends[i] > o })
	b := s.maps[i]
	return b, int(o % uint64(len(b)-n+1))
}

// mapFloorFiles maps the tables and value logs of the version of the
// database in dir (value logs of fewer than recLen bytes left out) and
// faults their pages in, as the DB does with the files it maps.
func (t *Tool) mapFloorFiles(dir string, recLen int) (f *floorFiles, err error) {
	lv, err := loadVersion(t.FS, dir)
	if err != nil {
		return nil, err
	}
	f = &floorFiles{}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	add := func(s *floorSpread, typ base.FileType, num base.FileNum, size uint64, least int) error {
		if size < uint64(least) {
			return nil
		}
		name := base.MakeFilename(typ, num)
		file, err := t.FS.Open(t.FS.PathJoin(dir, name))
		if err != nil {
			return err
		}
		data, ok, err := vfs.MapFile(file, int64(size))
		if !ok || err != nil {
			file.Close()
			if err == nil {
				err = errors.New("the filesystem cannot map it")
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		f.closers = append(f.closers, file)
		vfs.Populate(data, func() bool { return false })
		s.add(data)
		return nil
	}
	for _, level := range lv.v.Levels {
		for _, m := range level {
			if err := add(&f.tables, base.FileTypeTable, m.FileNum, m.Size, 64); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range lv.v.Vlogs {
		if err := add(&f.vlogs, base.FileTypeVlog, m.FileNum, m.Size, recLen); err != nil {
			return nil, err
		}
	}
	if len(f.tables.maps) == 0 || len(f.vlogs.maps) == 0 {
		return nil, fmt.Errorf("%s: the floor needs tables and value logs of at least %d bytes; the version holds %d tables and %d value logs that fit",
			dir, recLen, len(f.tables.maps), len(f.vlogs.maps))
	}
	return f, nil
}

func (f *floorFiles) close() {
	if f == nil {
		return
	}
	for _, s := range []*floorSpread{&f.tables, &f.vlogs} {
		for _, b := range s.maps {
			vfs.Unmap(b)
		}
		s.maps = nil
	}
	for _, c := range f.closers {
		c.Close()
	}
	f.closers = nil
}

// pass makes reads dependent pairs of accesses and returns the
// nanoseconds a pair: 8 bytes of a random table line, then, at an offset
// that depends on them, one byte of every line of a record of valueSize
// plus floorRecordOverhead bytes in a value log and a copy of its last
// valueSize bytes into dst. Each pair's offsets depend on the pair before
// it, so the pairs do not overlap either.
func (f *floorFiles) pass(reads, valueSize int, seed uint64, dst []byte) (ns float64, err error) {
	defer vfs.EndMapped(vfs.BeginMapped(), &err)
	recLen := valueSize + floorRecordOverhead
	x := seed*0x9e3779b97f4a7c15 | 1
	var carry uint64
	start := time.Now()
	for range reads {
		x ^= x<<13 + carry&1
		x ^= x >> 7
		x ^= x << 17
		tb, to := f.tables.at(x, 8)
		line := binary.LittleEndian.Uint64(tb[to:])
		vb, vo := f.vlogs.at(x>>17+line, recLen)
		rec := vb[vo : vo+recLen]
		var s uint64
		for i := 0; i < len(rec); i += 64 {
			s += uint64(rec[i])
		}
		copy(dst, rec[floorRecordOverhead:])
		carry = s + uint64(dst[0]) + uint64(dst[len(dst)-1])
	}
	el := time.Since(start)
	if carry == math.MaxUint64 { // never: keeps the loads
		return 0, errors.New("floor: impossible sum")
	}
	return float64(el.Nanoseconds()) / float64(reads), nil
}
