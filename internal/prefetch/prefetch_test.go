package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesLeavesMemoryAlone prefetches ranges of every alignment and
// length around line boundaries, including the last bytes of a buffer,
// and checks that nothing changed: a prefetch is only a hint.
func TestLinesLeavesMemoryAlone(t *testing.T) {
	buf := make([]byte, 1024)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := append([]byte(nil), buf...)
	for off := 0; off < 130; off++ {
		for n := 0; off+n <= len(buf) && n < 300; n++ {
			Lines(buf[off : off+n])
		}
	}
	Lines(buf[len(buf)-1:])
	Lines(nil)
	for i := range buf {
		if buf[i] != want[i] {
			t.Fatalf("byte %d changed from %d to %d", i, want[i], buf[i])
		}
	}
}

// TestLinesNeverFaults prefetches an address no mapping holds (page zero
// and a kernel-half address on 64-bit machines): a prefetch must not
// fault where a load would.
func TestLinesNeverFaults(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit addresses only")
	}
	for _, addr := range []uint64{64, 1 << 63} {
		lines(uintptr(addr), 4096)
	}
}

func BenchmarkLines4K(b *testing.B) {
	buf := make([]byte, 4096+64)
	for i := 0; i < b.N; i++ {
		Lines(buf[:4096])
	}
}
