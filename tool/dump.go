package tool

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/strata-db/strata/internal/base"
	"github.com/strata-db/strata/lsm/manifest"
	"github.com/strata-db/strata/lsm/record"
	"github.com/strata-db/strata/lsm/sstable"
	"github.com/strata-db/strata/vfs"
	"github.com/strata-db/strata/vlog"
)

func (t *Tool) runDump(args []string) int {
	fs := t.newFlags("dump")
	hex := fs.Bool("hex", false, "print keys and values in hex")
	full := fs.Bool("full", false, "print whole values (default: the first 32 bytes)")
	pos, err := parse(fs, args, 2, 2)
	if err != nil {
		return t.usageError("dump", err)
	}
	d := dumper{fs: t.FS, w: t.Stdout, hex: *hex, max: 32}
	if *full {
		d.max = 0
	}
	switch pos[0] {
	case "sst":
		err = d.sst(pos[1])
	case "vlog":
		err = d.vlog(pos[1])
	case "manifest":
		err = d.manifest(pos[1])
	case "wal":
		err = d.wal(pos[1])
	default:
		return t.usageError("dump", fmt.Errorf("unknown file kind %q (sst, vlog, manifest or wal)", pos[0]))
	}
	if err != nil {
		return t.fail("dump", err)
	}
	return 0
}

type dumper struct {
	fs  vfs.FS
	w   io.Writer
	hex bool
	max int
}

func (d *dumper) printf(format string, args ...any) { fmt.Fprintf(d.w, format, args...) }

func (d *dumper) bytes(b []byte) string { return printable(b, d.hex, d.max) }

func (d *dumper) key(b []byte) string { return printableKey(b, d.hex, 0) }

// fileNum returns the number in a file's name, or 0.
func (d *dumper) fileNum(path string) base.FileNum {
	_, num, _ := base.ParseFilename(d.fs.PathBase(path))
	return num
}

func (d *dumper) open(path string) (vfs.File, int64, error) {
	f, err := d.fs.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// entry formats one entry of a table or a batch.
func (d *dumper) entry(kind base.Kind, key, value []byte) string {
	meta, value, err := base.SplitEntry(kind, value)
	if err != nil {
		return fmt.Sprintf("%s: bad entry metadata: %v", d.key(key), err)
	}
	if kind.HasMeta() {
		return d.entry(kind.WithoutMeta(), key, value) + metaString(meta)
	}
	switch kind {
	case base.KindDelete:
		return d.key(key)
	case base.KindValuePointer:
		p, err := vlog.DecodePointer(value)
		if err != nil {
			return fmt.Sprintf("%s -> bad pointer %x: %v", d.key(key), value, err)
		}
		return fmt.Sprintf("%s -> %s.vlog offset %d, record %d bytes, value %d bytes", d.key(key), p.FileNum, p.Offset, p.Length, p.ValueLen)
	case base.KindRangeDelete:
		return fmt.Sprintf("[%s, %s)", d.key(key), d.key(value))
	}
	return fmt.Sprintf("%s = %s", d.key(key), d.bytes(value))
}

// metaString formats entry metadata.
func metaString(m base.EntryMeta) string {
	s := ""
	if m.ExpiresAt != 0 {
		s += " (expires " + time.UnixMilli(m.ExpiresAt).UTC().Format(time.RFC3339Nano) + ")"
	}
	if m.User != 0 {
		s += fmt.Sprintf(" (user metadata %d)", m.User)
	}
	return s
}

// sst prints a table block by block: each block's offset, size and
// compression, and its entries.
func (d *dumper) sst(path string) error {
	f, size, err := d.open(path)
	if err != nil {
		return err
	}
	name := d.fs.PathBase(path)
	r, err := sstable.NewReader(f, size, sstable.ReaderOptions{FileNum: d.fileNum(path), FileName: name})
	if err != nil {
		f.Close()
		return err
	}
	defer r.Close()
	layout, err := r.Layout()
	if err != nil {
		return err
	}
	d.printf("%s: %d bytes, %d blocks, footer at offset %d\n", name, size, len(layout), size-sstable.FooterLen)
	p := r.Properties()
	d.printf("properties: %d entries (%d deletions, %d range deletions), %d data blocks, keys %d bytes, values %d bytes, seqs [%d, %d], compression %s\n",
		p.NumEntries, p.NumDeletions, p.NumRangeDeletions, p.NumDataBlocks, p.RawKeySize, p.RawValueSize, p.SmallestSeq, p.LargestSeq, p.Compression)
	for _, k := range slices.Sorted(mapKeys(p.User)) {
		d.printf("  user property %s = %s\n", k, d.bytes([]byte(p.User[k])))
	}
	var errs []error
	for _, b := range layout {
		data, c, err := r.ReadBlock(b)
		if err != nil {
			d.printf("block %s at offset %d (%d bytes): %v\n", b.Type, b.Offset, b.Length, err)
			errs = append(errs, err)
			continue
		}
		d.printf("block %s at offset %d: %d bytes stored (%s), %d decoded\n", b.Type, b.Offset, b.Length, c, len(data))
		switch b.Type {
		case "data", "index", sstable.MetaRangeDelName:
			n := 0
			err = r.BlockEntries(b, data, func(k, v []byte) error {
				ik, ok := base.DecodeInternalKey(k)
				if !ok {
					return fmt.Errorf("entry %d: key %x shorter than a trailer", n, k)
				}
				switch b.Type {
				case "index":
					d.printf("  %s -> block %s\n", ik, handleString(v))
				default:
					d.printf("  #%d %s %s\n", ik.SeqNum(), ik.Kind(), d.entry(ik.Kind(), ik.UserKey, v))
				}
				n++
				return nil
			})
		case vlog.RefsBlock:
			refs, derr := vlog.DecodeRefs(data)
			if derr != nil {
				err = derr
				break
			}
			for _, ref := range refs {
				d.printf("  %s.vlog: %d pointers, %d record bytes\n", ref.FileNum, ref.Pointers, ref.Bytes)
			}
		case "meta-index":
			err = r.BlockEntries(b, data, func(k, v []byte) error {
				d.printf("  %s -> block %s\n", k, handleString(v))
				return nil
			})
		}
		if err != nil {
			d.printf("  %v\n", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// handleString decodes a block handle: uvarint offset, uvarint length.
func handleString(v []byte) string {
	var off, n uint64
	var w int
	if off, w = uvarint(v); w <= 0 {
		return fmt.Sprintf("(bad handle %x)", v)
	}
	if n, w = uvarint(v[w:]); w <= 0 {
		return fmt.Sprintf("(bad handle %x)", v)
	}
	return fmt.Sprintf("[%d, +%d)", off, n)
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// vlog prints a value log's records with their offsets.
func (d *dumper) vlog(path string) error {
	f, size, err := d.open(path)
	if err != nil {
		return err
	}
	name := d.fs.PathBase(path)
	num := d.fileNum(path)
	r, err := vlog.NewReader(f, num, size, vlog.ReaderOptions{FileName: name})
	if err != nil {
		f.Close()
		return err
	}
	defer r.Close()
	state := "unfinished (no valid footer: written at commit, or a crash stopped it)"
	if r.Finished() {
		state = fmt.Sprintf("finished, footer at offset %d", size-vlog.FooterLen)
	}
	d.printf("%s: %d bytes, file number %s, %s\n", name, size, num, state)
	sc := r.NewScanner()
	var n, values uint64
	end := uint64(vlog.HeaderLen)
	for sc.Next() {
		p := sc.Pointer()
		d.printf("offset %d: record %d bytes: %s = %s\n", p.Offset, p.Length, d.key(sc.Key()), d.bytes(sc.Value()))
		n++
		values += uint64(p.ValueLen)
		end = p.End()
	}
	d.printf("%d records, %d value bytes, records end at offset %d\n", n, values, end)
	if err := sc.Err(); err != nil {
		return err
	}
	if !r.Finished() && end < uint64(size) {
		d.printf("%d bytes at offset %d do not hold a record that verifies (a torn tail)\n", uint64(size)-end, end)
	}
	return nil
}

// manifest prints a manifest's version edits with their offsets, and the
// version they add up to.
func (d *dumper) manifest(path string) error {
	f, _, err := d.open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	name := d.fs.PathBase(path)
	rd := record.NewStrictReader(f, name)
	var edits []*manifest.VersionEdit
	for {
		off := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		ve := &manifest.VersionEdit{}
		if err := ve.Decode(rec); err != nil {
			return base.CorruptionErrorf(name, off, "%v", err)
		}
		d.printf("offset %d: edit %d (%d bytes)\n", off, len(edits), len(rec))
		for _, line := range strings.Split(strings.TrimSuffix(ve.String(), "\n"), "\n") {
			if line != "" {
				d.printf("  %s\n", line)
			}
		}
		edits = append(edits, ve)
	}
	v, err := manifest.Apply(nil, edits...)
	if err != nil {
		return base.CorruptionErrorf(name, -1, "%v", err)
	}
	d.printf("%d edits; the version they make:\n%s", len(edits), v)
	return nil
}

// wal prints a WAL's batches with their offsets.
func (d *dumper) wal(path string) error {
	f, _, err := d.open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := record.NewReader(f, d.fs.PathBase(path))
	n := 0
	for {
		off := rd.Offset()
		rec, err := rd.Next()
		if err == io.EOF {
			d.printf("%d batches; the log ends at offset %d\n", n, rd.Offset())
			return nil
		}
		if err != nil {
			return err
		}
		n++
		seq, entries, err := decodeBatch(rec)
		d.printf("offset %d: batch seq %d, %d entries, %d bytes\n", off, seq, len(entries), len(rec))
		for i, e := range entries {
			d.printf("  #%d %s %s\n", seq+uint64(i), e.kind, d.entry(e.kind, e.key, e.value))
		}
		if err != nil {
			d.printf("  %v\n", err)
			return base.CorruptionErrorf(d.fs.PathBase(path), off, "%v", err)
		}
	}
}
