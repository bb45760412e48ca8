package checkpoint

import (
	"errors"
	"testing"

	"github.com/strata-db/strata/internal/base"
)

// FuzzRegistry feeds arbitrary bytes to the registry's decoder and checks:
// it never panics, and whatever it accepts is a registry whose invariants
// hold and whose statistics can be computed.
func FuzzRegistry(f *testing.F) {
	good := &registry{Format: registryFormat, NextID: 3, Objects: map[string]*regObject{
		"data/a": {Size: 10, Segment: true, Pieces: []regPiece{{File: "000001.sst", Size: 4, Offset: 0, Refs: 1}, {File: "000002.vlog", Size: 6, Offset: 4, Refs: 2}}},
	}, Checkpoints: []regCheckpoint{
		{ID: 1, ManifestSize: 100, Pieces: []pieceRef{{"data/a", 4}}},
		{ID: 2, ManifestSize: 120, Pieces: []pieceRef{{"data/a", 0}, {"data/a", 4}}},
	}}
	b, err := seal(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("{}\nxxhash64:0000000000000000\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &registry{}
		if err := unseal(registryName, data, r); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("a decoding error that is not ErrCorruption: %v", err)
			}
			return
		}
		if r.Objects == nil {
			r.Objects = map[string]*regObject{}
		}
		if err := r.check(); err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("a check error that is not ErrCorruption: %v", err)
			}
			return
		}
		var s Stats
		r.fillStats(&s, int64(len(data)))
		_ = r.clone()
	})
}

// FuzzManifest feeds arbitrary bytes to the checkpoint manifest's decoder
// and, where it decodes, to the strata manifest inside it.
func FuzzManifest(f *testing.F) {
	b, err := seal(&Manifest{ID: 1, Files: []FileRef{{Name: "000001.sst", Size: 3, Object: "data/x"}}, DBManifest: []byte("garbage")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Manifest{}
		if err := unseal("checkpoints/x", data, m); err != nil {
			return
		}
		for _, fr := range m.Files {
			_ = checkFileName(fr.Name)
		}
		if v, err := decodeDBManifest(m); err == nil {
			_ = versionFileNames(v)
			_, _ = clipVersion(v, []byte("a"), []byte("b"))
		}
	})
}

func TestUnsealRejects(t *testing.T) {
	b, err := seal(map[string]int{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]int
	if err := unseal("x", b, &v); err != nil || v["a"] != 1 {
		t.Fatalf("round trip: %v, %v", v, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x20
		if err := unseal("x", c, &v); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("flipped byte %d: %v, want ErrCorruption", i, err)
		}
	}
	for n := range len(b) {
		if err := unseal("x", b[:n], &v); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("truncated to %d: %v, want ErrCorruption", n, err)
		}
	}
}
