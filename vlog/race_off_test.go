//go:build !race

package vlog

const raceEnabled = false
