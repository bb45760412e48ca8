//go:build !race

package strata

const readRaceEnabled = false
