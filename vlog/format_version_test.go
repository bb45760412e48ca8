package vlog

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/strata-db/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// withHeader returns a copy of a value log whose header records version v
// and flags: a file as a build writing that header would leave it.
func withHeader(data []byte, v, flags uint32) []byte {
	return rewriteHeader(data, func(h []byte) {
		binary.LittleEndian.PutUint32(h[8:], v)
		binary.LittleEndian.PutUint32(h[12:], flags)
	})
}

// TestFormatVersionNewerRefused: a value log whose header records a newer
// version, or a flag this build does not know, is refused with an error
// matching ErrNewerFormat (not ErrCorruption) that says a newer Strata
// wrote it; version 0 is damage.
func TestFormatVersionNewerRefused(t *testing.T) {
	_, data, _ := smallFile(t)
	for _, h := range []struct{ version, flags uint32 }{{formatVersion + 1, 0}, {formatVersion, 1}} {
		_, _, err := openBytes(withHeader(data, h.version, h.flags), ReaderOptions{})
		if !errors.Is(err, base.ErrNewerFormat) || errors.Is(err, base.ErrCorruption) {
			t.Fatalf("version %d flags %d: %v, want an error matching ErrNewerFormat only", h.version, h.flags, err)
		}
		if !strings.Contains(err.Error(), "newer Strata") {
			t.Fatalf("version %d flags %d: %q does not say a newer Strata wrote the file", h.version, h.flags, err)
		}
	}
	_, _, err := openBytes(withHeader(data, 0, 0), ReaderOptions{})
	requireCorruption(t, err, 0)
	// The file as written reads.
	_, _, err = openBytes(withHeader(data, formatVersion, 0), ReaderOptions{})
	require.NoError(t, err)
}
