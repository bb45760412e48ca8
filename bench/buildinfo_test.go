package bench

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleVersion: a dependency's version comes from the build
// information; a module built from source says so; an absent one is
// unknown.
func TestModuleVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	for _, m := range bi.Deps {
		if m.Path == "github.com/stretchr/testify" && m.Replace == nil {
			require.Equal(t, m.Version, ModuleVersion(m.Path))
		}
	}
	// A test binary records its main module (this one, from source) but,
	// unlike kvbench's, not always its dependencies.
	require.Contains(t, ModuleVersion(bi.Main.Path), "devel")
	require.Equal(t, "unknown", ModuleVersion("example.com/not/a/dependency"))
}
