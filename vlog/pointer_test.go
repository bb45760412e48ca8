package vlog

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-db/strata/internal/base"
)

func TestPointerRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	ptrs := []Pointer{
		{FileNum: 0, Offset: HeaderLen, Length: minRecordLen, ValueLen: 0},
		{FileNum: math.MaxUint64, Offset: math.MaxUint64 - math.MaxUint32, Length: math.MaxUint32, ValueLen: math.MaxUint32 - 6 - 5},
		{FileNum: 7, Offset: 1 << 27, Length: 4096 + 20, ValueLen: 4096},
	}
	for range 1000 {
		v := rng.Uint32N(1 << rng.IntN(32))
		ptrs = append(ptrs, Pointer{
			FileNum:  base.FileNum(rng.Uint64() >> rng.IntN(64)),
			Offset:   HeaderLen + rng.Uint64()>>(rng.IntN(40)+24),
			ValueLen: v,
			Length:   v + uint32(minRecordLen+4+rng.IntN(100)),
		})
	}
	for _, p := range ptrs {
		b := p.Encode([]byte("prefix"))
		require.Equal(t, "prefix", string(b[:6]))
		require.LessOrEqual(t, len(b)-6, MaxPointerLen)
		got, err := DecodePointer(b[6:])
		require.NoError(t, err, "%s", p)
		require.Equal(t, p, got)
	}
	require.Len(t, Pointer{FileNum: 12, Offset: 100 << 20, Length: 4096 + 21, ValueLen: 4096}.Encode(nil), 8)
	require.Len(t, ptrs[1].Encode(nil), 10+10+5+1)
	require.Equal(t, "000007.vlog:134217728+4116 (value 4096)", ptrs[2].String())
}

func TestDecodePointerStrict(t *testing.T) {
	enc := func(fields ...uint64) []byte {
		var b []byte
		for _, f := range fields {
			b = binary.AppendUvarint(b, f)
		}
		return b
	}
	good := enc(7, 100, 10, 7)
	_, err := DecodePointer(good)
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"empty":               nil,
		"truncated":           good[:3],
		"trailing byte":       append(good, 0),
		"non-canonical":       {7, 100, 10, 0x87, 0x00},
		"overflow":            append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, good[1:]...),
		"offset in header":    enc(7, HeaderLen-1, 10, 7),
		"value over 32 bits":  enc(7, 100, 1<<32, 7),
		"length over 32":      enc(7, 100, math.MaxUint32-5, 6),
		"length below value":  Pointer{FileNum: 7, Offset: 100, Length: 5, ValueLen: 10}.Encode(nil),
		"too little overhead": enc(7, 100, 200, 6), // a 200-byte value needs a two-byte length
		"offset overflows":    enc(7, math.MaxUint64-10, 10, 7),
	} {
		_, err := DecodePointer(b)
		require.Error(t, err, name)
		require.ErrorIs(t, err, errBadPointer, name)
		require.NotErrorIs(t, err, base.ErrCorruption, name)
	}
	_, err = DecodePointer(make([]byte, 1000))
	require.Error(t, err)
	require.Less(t, len(err.Error()), 300, "long input is elided in the message")
}
