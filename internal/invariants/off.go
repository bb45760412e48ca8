//go:build !invariants

// Package invariants tells whether expensive self-checks are compiled in.
// Build or test with -tags invariants to turn them on; CI does once.
package invariants

// Enabled is true in builds with the invariants tag.
const Enabled = false
