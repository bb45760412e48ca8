//go:build !amd64

package crc32c

const useFold = false

func foldCopy(crc uint32, dst, src, ahead []byte, k *[12]uint64) uint32 {
	panic("crc32c: no fold on this architecture")
}
