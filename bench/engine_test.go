package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStrataVariants(t *testing.T) {
	for _, p := range GCPolicyNames {
		name := "strata/" + p
		e, err := ResolveEngine(name)
		require.NoError(t, err, name)
		require.Equal(t, name, e.Name)
		require.NotNil(t, e.Open)
		require.Contains(t, e.Description, p)
		_, ok := LookupEngine(name)
		require.True(t, ok)
	}
	for name, want := range map[string]string{
		"strata/bogus": `engine "strata/bogus": gc: unknown policy "bogus"`,
		"strata/":      "no variant after the slash",
		"nope/passive": `unknown engine "nope/passive"`,
		"strata-x":     `unknown engine "strata-x"`,
	} {
		_, err := ResolveEngine(name)
		require.ErrorContains(t, err, want, name)
		_, ok := LookupEngine(name)
		require.False(t, ok, name)
	}
	require.NotContains(t, EngineNames(), "strata/passive", "variants are derived, not registered")
	require.Equal(t, "strata-reverse-lookup", DirName("strata/reverse-lookup"))
}

// TestStrataVariantsOpen opens every variant: each policy is accepted by
// the engine.
func TestStrataVariantsOpen(t *testing.T) {
	cfg := DefaultSpec().Config
	cfg.MemTableSize = 1 << 20
	cfg.CacheSize = 1 << 20
	cfg.GCBudget = 1.5
	for _, p := range GCPolicyNames {
		e, err := ResolveEngine("strata/" + p)
		require.NoError(t, err)
		eng, err := e.Open(t.TempDir(), cfg)
		require.NoError(t, err, p)
		require.NoError(t, eng.Put([]byte("k"), make([]byte, 2000)))
		require.NoError(t, eng.Close())
	}
}

func TestSpecGCPolicies(t *testing.T) {
	s := DefaultSpec()
	s.Engines = []string{"strata"}
	s.GCPolicies = []string{"passive", "reverse-lookup", "cost"}
	require.NoError(t, s.Normalize())
	require.Equal(t, []string{"strata/passive", "strata/reverse-lookup", "strata/cost"}, s.Engines)
	require.Equal(t, 1.3, s.Config.GCBudget, "the cost policy's default budget")
	require.NoError(t, s.Normalize(), "normalizing twice changes nothing")
	require.Equal(t, []string{"strata/passive", "strata/reverse-lookup", "strata/cost"}, s.Engines)

	for _, c := range []struct {
		engines, policies []string
		want              string
	}{
		{[]string{"strata"}, []string{"passive", "passive"}, `gc policy "passive" is listed twice`},
		{[]string{"strata"}, []string{"sometimes"}, `engine "strata/sometimes": gc: unknown policy "sometimes"`},
		{[]string{"strata/passive"}, []string{"rewrite"}, "strata is not among the engines"},
		{[]string{"strata", "strata/passive"}, []string{"passive"}, `engine "strata/passive" is listed twice`},
	} {
		s := DefaultSpec()
		s.Engines, s.GCPolicies = c.engines, c.policies
		require.ErrorContains(t, s.Normalize(), c.want, "%v %v", c.engines, c.policies)
	}
	s = DefaultSpec()
	s.Engines = []string{"strata"}
	s.Config.GCBudget = 0.5
	require.ErrorContains(t, s.Normalize(), "gc_budget")
}
