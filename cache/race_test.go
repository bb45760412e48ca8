//go:build race

package cache

// raceEnabled shortens tests that exercise no concurrency under the race
// detector, which slows them tenfold.
const raceEnabled = true
