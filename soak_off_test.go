//go:build !soak

package strata

// soak is set by the soak build tag (go test -tags soak): the randomized,
// crash, fault and corruption tests then run their exhaustive sizes.
const soak = false
