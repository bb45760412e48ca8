package manifest

import "fmt"

// ApplyUnlogged installs the version ve yields as current without writing
// anything: for a read-only DB, whose recovery holds in memory what a
// writer would record (the value logs it adopts). The log number and last
// sequence number do not move. Options.Mu held; the caller must not also
// use LogAndApply.
func (vs *VersionSet) ApplyUnlogged(ve *VersionEdit) error {
	newV, err := Apply(vs.current, ve)
	if err != nil {
		return fmt.Errorf("strata: cannot apply version edit: %w", err)
	}
	old := vs.current
	newV.Ref()
	vs.current = newV
	if old != nil {
		old.Unref()
	}
	return nil
}
