//go:build soak

package strata

const soak = true
