//go:build race

package strata

// readRaceEnabled is set under the race detector, whose instrumentation
// allocates, so allocation counts of the read path are not checked.
const readRaceEnabled = true
