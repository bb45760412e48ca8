package bench

import (
	"runtime/debug"
	"sync"
)

// buildInfo is the running binary's, read once.
var buildInfo = sync.OnceValue(func() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
})

// ModuleVersion returns the version of module path the running binary was
// built with, from its build information: the module's version ("v2.1.7"),
// a replacement's, or, for a module built from its source tree (in this
// repository's workspace: "(devel)"), the VCS revision the binary was built
// at. "unknown" when the binary does not say.
func ModuleVersion(path string) string {
	bi := buildInfo()
	if bi == nil {
		return "unknown"
	}
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Path != path {
			continue
		}
		if r := m.Replace; r != nil {
			if r.Version != "" {
				return r.Version
			}
			m = r
		}
		if m.Version != "" && m.Version != "(devel)" {
			return m.Version
		}
		return develVersion(bi)
	}
	return "unknown"
}

// develVersion describes a module built from its source tree: "devel" and,
// when the build recorded it, the VCS revision (+dirty with uncommitted
// changes).
func develVersion(bi *debug.BuildInfo) string {
	v := "devel"
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if dirty {
			v += "+dirty"
		}
	}
	return v
}
