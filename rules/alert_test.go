package rules

import (
	"os"
	"strconv"
	"strings"
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

// TestAlertBandKeepsOnlyFiring steps an alert with clear_when through the
// band between its two conditions: the band keeps a firing alert firing,
// but a pending one goes back to inactive, since `for` counts only the
// time `when` holds; only clear_when resolves a firing one.
func TestAlertBandKeepsOnlyFiring(t *testing.T) {
	timing := Timing{For: time.Minute, HasClear: true}
	runSteps(t, timing, []step{
		{0, true, false, NoChange, StatePending},                   // 86 C
		{20 * time.Second, false, false, NoChange, StateInactive},  // 83 C: in the band, pending ends
		{40 * time.Second, true, false, NoChange, StatePending},    // 86 C: for counts from here
		{99 * time.Second, true, false, NoChange, StatePending},    // 1s short of for
		{100 * time.Second, true, false, Fired, StateFiring},       // held for 1m
		{120 * time.Second, false, false, NoChange, StateFiring},   // 82 C: in the band, still firing
		{140 * time.Second, false, true, Resolved, StateInactive},  // 79 C
		{160 * time.Second, false, false, NoChange, StateInactive}, // the band alone starts nothing
		{180 * time.Second, true, false, NoChange, StatePending},
	})
}

// TestAlertTrueFor: TrueFor is how long `when` had held without a break
// when the value was read, pending or firing, and a firing alert in the
// band keeps the run its value belongs to.
func TestAlertTrueFor(t *testing.T) {
	timing := Timing{For: 2 * time.Minute, HasClear: true}
	var a Alert
	for _, s := range []struct {
		at   time.Duration
		when Truth
		want time.Duration
	}{
		{0, TruthTrue, 0},
		{time.Minute, TruthTrue, time.Minute},
		{90 * time.Second, TruthUnknown, time.Minute}, // a run breaks on an unknown too
		{2 * time.Minute, TruthTrue, 0},
		{4 * time.Minute, TruthTrue, 2 * time.Minute},  // fires
		{5 * time.Minute, TruthFalse, 2 * time.Minute}, // in the band: the last run
		{6 * time.Minute, TruthTrue, 0},
		{7 * time.Minute, TruthTrue, time.Minute},
	} {
		if s.when == TruthTrue {
			a.Value, a.ValueAt = 1, t0.Add(s.at)
		}
		a.Step(t0.Add(s.at), s.when, TruthFalse, timing)
		if got := a.TrueFor(); got != s.want {
			t.Errorf("at +%v (when %v, %v): TrueFor %v, want %v", s.at, s.when, a.State, got, s.want)
		}
	}
	if a.State != StateFiring {
		t.Errorf("state %v, want firing", a.State)
	}
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

// TestDocsTimeline steps an alert through the timeline docs/rules.md shows
// for `for`, `clear_when` and `keep_firing_for`, row by row: the conditions
// and the state after each sample must be what the page says.
func TestDocsTimeline(t *testing.T) {
	page, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "| time | temperature | `when` | `clear_when` | state after | why |\n| --- | --- | --- | --- | --- | --- |\n")
	if !ok {
		t.Fatal("docs/rules.md has no timeline of GPUHot")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	timing := Timing{For: 2 * time.Minute, KeepFiringFor: time.Minute, HasClear: true}
	var a Alert
	rows := strings.Split(table, "\n")
	for _, row := range rows {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) < 5 {
			t.Fatalf("row %q: want time, temperature, when, clear_when and state", row)
		}
		at, err := time.ParseDuration(cells[0])
		if err != nil {
			t.Fatalf("row %q: %v", row, err)
		}
		temp, err := strconv.ParseFloat(strings.TrimSuffix(cells[1], " C"), 64)
		if err != nil {
			t.Fatalf("row %q: %v", row, err)
		}
		when, clear := temp > 85, temp < 80
		if cells[2] != strconv.FormatBool(when) || cells[3] != strconv.FormatBool(clear) {
			t.Errorf("at %v (%v C): the page says when %s, clear_when %s; want %v, %v", at, temp, cells[2], cells[3], when, clear)
		}
		a.Step(t0.Add(at), truth(when), truth(clear), timing)
		if a.State.String() != cells[4] {
			t.Errorf("at %v (%v C): state %v, the page says %s", at, temp, a.State, cells[4])
		}
	}
	if len(rows) < 10 {
		t.Errorf("the timeline has %d rows, want all of them read", len(rows))
	}
}
