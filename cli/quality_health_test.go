package cli_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	root "github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/rules"
)

// healthRules are the health rules of config.example.yaml.
var healthRules = []string{"GPUMemoryUncorrectable", "GPURowRemapFailed", "GPURowRemapPending", "GPUHardwareSlowdown",
	"GPUPCIeLinkDegraded", "GPUNVLinkErrors", "GPUFanStopped", "GPUHardwareXID", "GPUApplicationXIDs"}

// healthExpect says which health rule a Truth of a health scenario must
// fire, and within how long after the Truth's From.
var healthExpect = map[string][]struct {
	alert  string
	within time.Duration
}{
	sim.ExpectECC:      {{"GPUMemoryUncorrectable", 10 * time.Second}, {"GPURowRemapPending", 10 * time.Second}, {"GPUHardwareXID", 10 * time.Second}},
	sim.ExpectThrottle: {{"GPUHardwareSlowdown", 6 * time.Minute}},
	sim.ExpectPCIe:     {{"GPUPCIeLinkDegraded", 6 * time.Minute}},
	sim.ExpectXIDApp:   {{"GPUApplicationXIDs", 5 * time.Minute}},
	sim.ExpectXIDHW:    {{"GPUHardwareXID", 10 * time.Second}},
	sim.ExpectNVLink:   {{"GPUNVLinkErrors", 10 * time.Minute}},
}

// firing is a transition of a simulated run, at its offset from the start.
type firing struct {
	alert string
	gpu   int
	at    time.Duration
	state string
}

// runExample runs the example config's rules over a scenario and seed and
// returns every transition.
func runExample(t *testing.T, rs []*rules.Rule, scenario string, seed uint64) ([]firing, []sim.Truth) {
	t.Helper()
	start := simStart()
	src, err := sim.New(sim.Config{Scenario: scenario, Seed: seed, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	e := rules.NewEngine(rs, rules.Options{RepeatInterval: 4 * time.Hour})
	var out []firing
	for {
		s, err := src.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return out, src.Truth()
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range e.Eval(s) {
			if !tr.Repeat {
				out = append(out, firing{tr.Alert, tr.GPU, tr.At.Sub(start), tr.StateName()})
			}
		}
	}
}

// TestHealthScenariosAlert runs the example config on every health
// scenario for several seeds: each health rule fires on its scenario's
// GPU, soon enough, once; no health rule fires on a healthy GPU. The
// other scenarios are the alert-quality tests', on which no health rule
// fires (TestHealthRulesQuietElsewhere).
func TestHealthScenariosAlert(t *testing.T) {
	cfg, err := config.Parse("config.example.yaml", root.ExampleConfig, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, scenario := range sim.HealthScenarios() {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", scenario, seed), func(t *testing.T) {
				fs, truths := runExample(t, cfg.Rules, scenario, seed)
				sick := map[int]bool{}
				for _, tr := range truths {
					for _, want := range healthExpect[tr.Expect] {
						sick[tr.GPU] = true
						i := slices.IndexFunc(fs, func(f firing) bool { return f.alert == want.alert && f.gpu == tr.GPU && f.state == "firing" })
						switch {
						case i < 0:
							t.Errorf("%s on gpu %d (%s from %v): never fired", want.alert, tr.GPU, tr.Expect, tr.From)
						case fs[i].at < tr.From || fs[i].at > tr.From+want.within:
							t.Errorf("%s on gpu %d fired at %v; want it within %v of %v", want.alert, tr.GPU, fs[i].at, want.within, tr.From)
						}
						if n := countFirings(fs, want.alert, tr.GPU); n != 1 {
							t.Errorf("%s on gpu %d fired %d times, want once", want.alert, tr.GPU, n)
						}
					}
				}
				for _, f := range fs {
					if !sick[f.gpu] && slices.Contains(healthRules, f.alert) {
						t.Errorf("%s %s on healthy gpu %d at %v", f.alert, f.state, f.gpu, f.at)
					}
				}
				if t.Failed() {
					t.Logf("transitions:\n%s", describeFirings(fs))
				}
			})
		}
	}
}

// TestHealthRulesQuietElsewhere: no health rule fires on the scenarios of
// the alert-quality tests, whose GPUs are healthy (their readings say so:
// no ECC error, full PCIe width, no hardware slowdown).
func TestHealthRulesQuietElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every scenario of the simulator")
	}
	cfg, err := config.Parse("config.example.yaml", root.ExampleConfig, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, scenario := range sim.Scenarios() {
		if slices.Contains(sim.HealthScenarios(), scenario) {
			continue
		}
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			fs, _ := runExample(t, cfg.Rules, scenario, 2)
			for _, f := range fs {
				if slices.Contains(healthRules, f.alert) {
					t.Errorf("%s %s on gpu %d at %v", f.alert, f.state, f.gpu, f.at)
				}
			}
		})
	}
}

func countFirings(fs []firing, alert string, gpu int) int {
	n := 0
	for _, f := range fs {
		if f.alert == alert && f.gpu == gpu && f.state == "firing" {
			n++
		}
	}
	return n
}

func describeFirings(fs []firing) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %v %s %s gpu %d\n", f.at, f.alert, f.state, f.gpu)
	}
	return b.String()
}
