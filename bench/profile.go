package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
)

// Profiles of Strata's runs (Spec.CPUProfile, Spec.MemProfile): the CPU
// profile covers every benchmark of a Strata engine's first repetition,
// from its first open to its last close; the heap profile is taken at the
// end of its last benchmark, before the close, after a garbage collection.
// Its in-use figures are Strata's at that point; its allocation figures
// count since the process started, so they are Strata's alone when Strata
// runs first (as it does by default). Each Strata engine of a run (GC
// policy variants) gets files of its own, named after it.

// isStrataEngine reports whether engine is Strata or one of its variants.
func isStrataEngine(engine string) bool {
	return engine == "strata" || strings.HasPrefix(engine, "strata/")
}

// profilePath is where engine's profile goes: path itself when the run has
// one Strata engine, else path with the engine's name before its extension
// ("cpu.prof" -> "cpu-strata-passive.prof").
func profilePath(spec *Spec, path, engine string) string {
	n := 0
	for _, e := range spec.Engines {
		if isStrataEngine(e) {
			n++
		}
	}
	if n <= 1 {
		return path
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + DirName(engine) + ext
}

// profiler is the profiling of one engine's run; nil profiles nothing.
type profiler struct {
	spec   *Spec
	engine string
	cpu    *os.File
}

// startProfiling starts the CPU profile of engine's repetition r, when the
// spec asks for profiles and engine is Strata's first repetition; it
// returns nil otherwise.
func startProfiling(spec *Spec, engine string, r int) (*profiler, error) {
	if r != 1 || !isStrataEngine(engine) || (spec.CPUProfile == "" && spec.MemProfile == "") {
		return nil, nil
	}
	p := &profiler{spec: spec, engine: engine}
	if spec.CPUProfile != "" {
		f, err := os.Create(profilePath(spec, spec.CPUProfile, engine))
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		p.cpu = f
	}
	return p, nil
}

// heap writes the heap profile, if asked for.
func (p *profiler) heap() error {
	if p == nil || p.spec.MemProfile == "" {
		return nil
	}
	f, err := os.Create(profilePath(p.spec, p.spec.MemProfile, p.engine))
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	runtime.GC()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	return nil
}

// stop ends the CPU profile.
func (p *profiler) stop() error {
	if p == nil || p.cpu == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := p.cpu.Close()
	p.cpu = nil
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return nil
}
