package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// withFooterVersion returns a copy of the table data whose footer records
// version v, its checksum recomputed: a table as a build writing version
// v would leave it.
func withFooterVersion(data []byte, v uint32) []byte {
	b := bytes.Clone(data)
	ft := b[len(b)-footerLen:]
	binary.LittleEndian.PutUint32(ft[2*maxHandleLen:], v)
	binary.LittleEndian.PutUint32(ft[footerSumOff:], checksum(ft[:footerSumOff]))
	return b
}

// TestFormatVersionNewerRefused: a table whose footer records a version
// newer than this build writes is refused by NewReader and CheckFooter
// with an error that matches ErrNewerFormat, says a newer Strata wrote
// it, and is not taken for corruption.
func TestFormatVersionNewerRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	f, _ := writeTable(t, smallSpec(rng), WriterOptions{BlockSize: 256})
	bad := withFooterVersion(f.contents(t), formatVersion+1)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, base.ErrNewerFormat) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%s: %v, want an error matching ErrNewerFormat only", what, err)
		}
		if !strings.Contains(err.Error(), "newer Strata") || !strings.Contains(err.Error(), "000012.sst") {
			t.Fatalf("%s: %q does not name the file and say a newer Strata wrote it", what, err)
		}
	}
	_, err := NewReader(readOnly(t, bad), int64(len(bad)), ReaderOptions{FileNum: 12})
	check("NewReader", err)
	check("CheckFooter", CheckFooter(readOnly(t, bad), int64(len(bad)), "000012.sst"))
}

// TestFormatVersionOlderRead: a table that records an older version this
// build reads (1, before entries carried metadata) opens and reads as
// written.
func TestFormatVersionOlderRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	spec := smallSpec(rng)
	f, _ := writeTable(t, spec, WriterOptions{BlockSize: 256})
	old := withFooterVersion(f.contents(t), minFormatVersion)
	if err := readWholeTable(t, readOnly(t, old), int64(len(old)), spec); err != nil {
		t.Fatal(err)
	}
	// Version 0 was never written: it is damage.
	zero := withFooterVersion(old, 0)
	if err := CheckFooter(readOnly(t, zero), int64(len(zero)), "000012.sst"); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("version 0: %v, want corruption", err)
	}
}
