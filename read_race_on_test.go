//go:build race

package strata

// readRaceEnabled is set under the race detector, whose instrumentation
// allocates, so allocation counts of the read path are not checked.
const readRaceEnabled = true

// raceEnabled is set under the race detector, which slows tests several
// times: the crash tests of shared files check a third of their states
// under it.
const raceEnabled = true
