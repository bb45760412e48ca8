package strata

import (
	"testing"

	"github.com/strata-db/strata/compaction"
	"github.com/stretchr/testify/require"
)

// TestPickerOptionsDefaults checks that a DB with default Options shapes
// its tree exactly as a picker with zero options would.
func TestPickerOptionsDefaults(t *testing.T) {
	got := (&Options{}).EnsureDefaults().pickerOptions().EnsureDefaults()
	require.Equal(t, compaction.PickerOptions{}.EnsureDefaults(), got)
}
