package rules

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// step is one evaluation: at t0+at, with these condition values, expecting
// this change and this state afterwards.
type step struct {
	at            time.Duration
	active, clear bool
	change        Change
	state         State
}

func truth(b bool) Truth {
	if b {
		return TruthTrue
	}
	return TruthFalse
}

func runSteps(t *testing.T, timing Timing, steps []step) *Alert {
	t.Helper()
	var a Alert
	for i, s := range steps {
		change := a.Step(t0.Add(s.at), truth(s.active), truth(s.clear), timing)
		if change != s.change || a.State != s.state {
			t.Fatalf("step %d (+%v active=%v clear=%v): got change %v state %v, want change %v state %v",
				i, s.at, s.active, s.clear, change, a.State, s.change, s.state)
		}
	}
	return &a
}

func TestAlertForBoundary(t *testing.T) {
	a := runSteps(t, Timing{For: time.Minute}, []step{
		{0, false, false, NoChange, StateInactive},
		{5 * time.Second, true, false, NoChange, StatePending},
		{64 * time.Second, true, false, NoChange, StatePending}, // 59s held: 1s short
		{65 * time.Second, true, false, Fired, StateFiring},     // exactly 1m held
		{70 * time.Second, true, false, NoChange, StateFiring},
		{75 * time.Second, false, false, Resolved, StateInactive},
	})
	if got, want := a.FiredAt, t0.Add(65*time.Second); !got.Equal(want) {
		t.Errorf("FiredAt %v, want %v", got, want)
	}
	if got, want := a.ResolvedAt, t0.Add(75*time.Second); !got.Equal(want) {
		t.Errorf("ResolvedAt %v, want %v", got, want)
	}
}

func TestAlertPendingThatClearsSendsNothing(t *testing.T) {
	a := runSteps(t, Timing{For: time.Minute}, []step{
		{0, true, false, NoChange, StatePending},
		{59 * time.Second, true, false, NoChange, StatePending},
		{60*time.Second - 1, false, false, NoChange, StateInactive},
		{70 * time.Second, true, false, NoChange, StatePending}, // for counts again from here
		{129 * time.Second, true, false, NoChange, StatePending},
		{130 * time.Second, true, false, Fired, StateFiring},
	})
	if !a.ResolvedAt.IsZero() {
		t.Errorf("ResolvedAt %v, want zero: a pending alert never resolves", a.ResolvedAt)
	}
}

func TestAlertWithoutForFiresAtOnce(t *testing.T) {
	runSteps(t, Timing{}, []step{
		{0, true, false, Fired, StateFiring},
		{time.Second, false, false, Resolved, StateInactive},
	})
}

func TestAlertKeepFiringFor(t *testing.T) {
	runSteps(t, Timing{KeepFiringFor: 10 * time.Minute}, []step{
		{0, true, false, Fired, StateFiring},
		{5 * time.Second, false, false, NoChange, StateFiring}, // clearing starts
		{5*time.Second + 10*time.Minute - 1, false, false, NoChange, StateFiring},
		{5*time.Second + 10*time.Minute, false, false, Resolved, StateInactive},
	})
}

func TestAlertKeepFiringForRestartsWhenConditionReturns(t *testing.T) {
	runSteps(t, Timing{KeepFiringFor: time.Minute}, []step{
		{0, true, false, Fired, StateFiring},
		{10 * time.Second, false, false, NoChange, StateFiring},
		{50 * time.Second, true, false, NoChange, StateFiring}, // back: clearing forgotten
		{60 * time.Second, false, false, NoChange, StateFiring},
		{119 * time.Second, false, false, NoChange, StateFiring},
		{120 * time.Second, false, false, Resolved, StateInactive},
	})
}

func TestAlertClearWhenHysteresis(t *testing.T) {
	// when: temperature > 85, clear_when: temperature < 80, for: 1m.
	timing := Timing{For: time.Minute, HasClear: true}
	temps := []float64{86, 87, 86, 84, 86, 83, 81, 79, 86}
	var a Alert
	var changes []Change
	for i, temp := range temps {
		changes = append(changes, a.Step(t0.Add(time.Duration(i)*30*time.Second), truth(temp > 85), truth(temp < 80), timing))
	}
	want := []Change{NoChange, NoChange, Fired, NoChange, NoChange, NoChange, NoChange, Resolved, NoChange}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("sample %d (%v C): got %v, want %v", i, temps[i], changes[i], want[i])
		}
	}
	if a.State != StatePending {
		t.Errorf("final state %v, want pending (86 C again after resolving)", a.State)
	}
}

func TestAlertRepeatDue(t *testing.T) {
	a := Alert{State: StateFiring, LastSentAt: t0}
	for _, tc := range []struct {
		at    time.Duration
		every time.Duration
		want  bool
	}{
		{4*time.Hour - time.Second, 4 * time.Hour, false},
		{4 * time.Hour, 4 * time.Hour, true},
		{10 * time.Hour, 0, false},
	} {
		if got := a.RepeatDue(t0.Add(tc.at), tc.every); got != tc.want {
			t.Errorf("RepeatDue(+%v, every %v) = %v, want %v", tc.at, tc.every, got, tc.want)
		}
	}
	a.State = StatePending
	if a.RepeatDue(t0.Add(5*time.Hour), time.Hour) {
		t.Error("a pending alert is never repeated")
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{StateInactive: "inactive", StatePending: "pending", StateFiring: "firing", State(9): "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func TestAlertUnknownConditionHoldsFiring(t *testing.T) {
	var a Alert
	timing := Timing{}
	steps := []struct {
		when Truth
		want State
	}{
		{TruthTrue, StateFiring},
		{TruthUnknown, StateFiring}, // a reading went missing: still firing
		{TruthUnknown, StateFiring},
		{TruthFalse, StateInactive},
		{TruthUnknown, StateInactive}, // unknown never starts an alert
	}
	for i, s := range steps {
		a.Step(t0.Add(time.Duration(i)*time.Minute), s.when, TruthUnknown, timing)
		if a.State != s.want {
			t.Fatalf("step %d (%v): state %v, want %v", i, s.when, a.State, s.want)
		}
	}
	var p Alert
	p.Step(t0, TruthTrue, TruthUnknown, Timing{For: time.Hour})
	if p.Step(t0.Add(time.Minute), TruthUnknown, TruthUnknown, Timing{For: time.Hour}); p.State != StateInactive {
		t.Errorf("a pending alert whose condition became unknown is %v, want inactive", p.State)
	}
}

// TestAlertHysteresisHoldsWhilePending steps an alert with clear_when through
// the band between its two conditions while it is pending: the band keeps
// it pending and `for` counts on; only clear_when sends it back.
func TestAlertHysteresisHoldsWhilePending(t *testing.T) {
	timing := Timing{For: time.Minute, HasClear: true}
	runSteps(t, timing, []step{
		{0, true, false, NoChange, StatePending},                     // 86 C
		{20 * time.Second, false, false, NoChange, StatePending},     // 83 C: in the band
		{59 * time.Second, false, false, NoChange, StatePending},     // 1s short of for
		{60 * time.Second, false, false, Fired, StateFiring},         // held (in the band) for 1m
		{80 * time.Second, false, false, NoChange, StateFiring},      // 82 C
		{100 * time.Second, false, true, Resolved, StateInactive},    // 79 C
		{120 * time.Second, true, false, NoChange, StatePending},     // 86 C again
		{140 * time.Second, false, true, NoChange, StateInactive},    // 79 C: a pending alert that clears sends nothing
		{179*time.Second + 1, false, false, NoChange, StateInactive}, // the band alone starts nothing
		{180 * time.Second, true, false, NoChange, StatePending},
	})
}

// TestAlertPendingUnknownDoesNotHold: an unknown condition (no reading)
// never keeps an alert pending, band or not.
func TestAlertPendingUnknownDoesNotHold(t *testing.T) {
	var a Alert
	timing := Timing{For: time.Minute, HasClear: true}
	a.Step(t0, TruthTrue, TruthFalse, timing)
	if a.State != StatePending {
		t.Fatalf("got %v, want pending", a.State)
	}
	for _, tc := range []struct{ when, clear Truth }{
		{TruthUnknown, TruthFalse},
		{TruthFalse, TruthUnknown},
	} {
		b := a
		b.Step(t0.Add(30*time.Second), tc.when, tc.clear, timing)
		if b.State != StateInactive {
			t.Errorf("pending, then when %v and clear_when %v: got %v, want inactive", tc.when, tc.clear, b.State)
		}
	}
}
