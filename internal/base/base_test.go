package base

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInternalKeyOrder(t *testing.T) {
	keys := []InternalKey{
		MakeInternalKey([]byte("b"), 1, KindSet),
		MakeInternalKey([]byte("a"), 1, KindSet),
		MakeInternalKey([]byte("a"), 9, KindDelete),
		MakeInternalKey([]byte("a"), 9, KindSet),
		MakeSearchKey([]byte("a"), 9),
		{UserKey: []byte("b"), Trailer: RangeDelSentinel},
	}
	slices.SortFunc(keys, InternalCompare)
	var got []string
	for _, k := range keys {
		got = append(got, k.String())
	}
	require.Equal(t, []string{
		`"a"#9,MAX`, `"a"#9,SET`, `"a"#9,DEL`, `"a"#1,SET`,
		`"b"#72057594037927935,RANGEDEL`, `"b"#1,SET`,
	}, got)
	for i := 1; i < len(keys); i++ {
		a, b := keys[i-1].AppendEncoded(nil), keys[i].AppendEncoded(nil)
		require.LessOrEqual(t, CompareEncoded(a, b), 0)
		d, ok := DecodeInternalKey(a)
		require.True(t, ok)
		require.Equal(t, 0, InternalCompare(d, keys[i-1]))
	}
	_, ok := DecodeInternalKey([]byte("short"))
	require.False(t, ok)
}

func TestSeparatorSuccessor(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"abc", "abz", "abd"},
		{"abc", "abd", "abc"},
		{"ab", "abc", "ab"},
		{"a\xff", "b", "a\xff"},
	} {
		got := string(Separator(nil, []byte(tc.a), []byte(tc.b)))
		require.Equal(t, tc.want, got, "Separator(%q, %q)", tc.a, tc.b)
		require.True(t, tc.a <= got && (got < tc.b || got == tc.a))
	}
	require.Equal(t, "b", string(Successor(nil, []byte("abc"))))
	require.Equal(t, "\xff\xff", string(Successor(nil, []byte("\xff\xff"))))
}

func TestFilenames(t *testing.T) {
	for _, typ := range []FileType{FileTypeLog, FileTypeTable, FileTypeVlog, FileTypeManifest, FileTypeTemp, FileTypeOptions} {
		name := MakeFilename(typ, 42)
		gotType, num, ok := ParseFilename(name)
		require.True(t, ok, name)
		require.Equal(t, typ, gotType, name)
		require.Equal(t, FileNum(42), num, name)
	}
	for _, bad := range []string{"x.sst", "000001.txt", "MANIFEST-x", "", ".log"} {
		_, _, ok := ParseFilename(bad)
		require.False(t, ok, bad)
	}
}

func TestCorruptionError(t *testing.T) {
	err := CorruptionErrorf("000007.sst", 4096, "checksum mismatch")
	require.True(t, errors.Is(err, ErrCorruption))
	require.Contains(t, err.Error(), "000007.sst")
	require.Contains(t, err.Error(), "4096")
}
