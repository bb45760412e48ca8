//go:build race

package vlog

// raceEnabled is set when tests run under the race detector, which makes
// every byte the tests read costly; the exhaustive tests then sample.
const raceEnabled = true
