package suites

import "testing"

// TestGates runs each gate with its variable unset, "0", "1" and
// "require": only the last two let the test go on.
func TestGates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short skips every suite: nothing to tell apart")
	}
	for _, g := range []struct {
		env  string
		gate func(testing.TB)
	}{{FleetEnv, Fleet}, {LongEnv, Long}, {BrowserEnv, Browser}} {
		for _, tt := range []struct {
			value string
			runs  bool
		}{{"", false}, {"0", false}, {"1", true}, {"require", true}} {
			ran := false
			t.Run(g.env+"="+tt.value, func(t *testing.T) {
				t.Setenv(g.env, tt.value)
				g.gate(t)
				ran = true
			})
			if ran != tt.runs {
				t.Errorf("%s=%q: the test went on: %v, want %v", g.env, tt.value, ran, tt.runs)
			}
		}
	}
	t.Setenv(FleetEnv, "require")
	if !Required(FleetEnv) {
		t.Errorf(`Required with %s=require: got false`, FleetEnv)
	}
	t.Setenv(FleetEnv, "1")
	if Required(FleetEnv) {
		t.Errorf(`Required with %s=1: got true`, FleetEnv)
	}
}
