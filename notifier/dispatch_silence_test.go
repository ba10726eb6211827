package notifier_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
)

// TestDispatchSilenceLetsPostedAlertsResolve is what docs/notifications.md
// says a silence does to resolves: an alert posted before the silence
// began still gets its resolve, so its message does not stay firing; one
// the silence muted from its start gets none, as its receiver never heard
// it fire.
func TestDispatchSilenceLetsPostedAlertsResolve(t *testing.T) {
	sil, err := notifier.NewSilences(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := notifier.ParseMatchers(`alert="GPUHot"`)
	if err != nil {
		t.Fatal(err)
	}
	begins := t0.Add(90 * time.Minute)
	if _, err := sil.Add(notifier.Silence{Matchers: ms, StartsAt: begins, EndsAt: begins.Add(4 * time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(10 * time.Second), RepeatInterval: ptr(24 * time.Hour)}, sil)
	hot := newRule("GPUHot", rules.SeverityCritical, nil)
	firesOn1 := t0.Add(2 * time.Hour)
	steps := []struct {
		name string
		ts   []rules.Transition
		at   time.Time
		want []string
	}{
		{"GPU 0 fires before the silence: posted", []rules.Transition{fires(hot, 0, t0)}, t0, []string{"team GPUHot firing 0"}},
		{"GPU 1 fires during it: muted", []rules.Transition{fires(hot, 1, firesOn1)}, firesOn1, nil},
		{"both resolve during it: GPU 0's resolve only", []rules.Transition{resolves(hot, 0, t0, t0.Add(4*time.Hour)), resolves(hot, 1, firesOn1, t0.Add(4*time.Hour))},
			t0.Add(4 * time.Hour), []string{"team GPUHot resolved 0"}},
	}
	for _, s := range steps {
		if got := dispatchWait(t, d, s.at, s.ts...); !slices.Equal(got, s.want) {
			t.Errorf("%s: got %q, want %q", s.name, got, s.want)
		}
	}
}
