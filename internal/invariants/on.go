//go:build invariants

package invariants

// Enabled is true in builds with the invariants tag (go test -tags
// invariants): expensive self-checks (version reference counts, the
// garbage ledger recomputed from scratch) run after every change.
const Enabled = true
