//go:build !amd64

package crc32c

// useFold is a variable, never set here, so that the tests that switch
// the fold path on and off (withFold) build on every architecture.
var useFold = false

func foldCopy(crc uint32, dst, src, ahead []byte, k *[12]uint64) uint32 {
	panic("crc32c: no fold on this architecture")
}
