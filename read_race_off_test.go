//go:build !race

package strata

const readRaceEnabled = false

const raceEnabled = false
