package rules

import "time"

// State is where an alert stands in its life cycle.
type State int

const (
	// StateInactive: the condition does not hold (or the alert resolved).
	StateInactive State = iota
	// StatePending: the condition holds but not yet for the rule's `for`.
	StatePending
	// StateFiring: the condition has held for `for`; people are told.
	StateFiring
)

// String returns the state's name as the CLI and JSON show it.
func (s State) String() string {
	switch s {
	case StateInactive:
		return "inactive"
	case StatePending:
		return "pending"
	case StateFiring:
		return "firing"
	}
	return "unknown"
}

// Change is what one evaluation did to an alert that people must hear about.
type Change int

const (
	// NoChange: nothing to tell (pending started or was cancelled, or the state held).
	NoChange Change = iota
	// Fired: the alert went from pending (or inactive, with no `for`) to firing.
	Fired
	// Resolved: a firing alert stopped firing.
	Resolved
)

// Truth is a condition's outcome in three-valued logic.
type Truth int8

// The outcomes of a condition.
const (
	TruthFalse   Truth = iota // known not to hold
	TruthTrue                 // holds
	TruthUnknown              // depends on a reading or window without a value
)

// Timing is the part of a rule that drives the state machine.
type Timing struct {
	For           time.Duration // how long the condition must hold before firing
	KeepFiringFor time.Duration // how long a firing alert stays firing after it would resolve
	HasClear      bool          // a clear_when condition decides when a firing alert resolves
}

// Alert is the state of one rule on one GPU. Its fields are exported so the
// state can be stored and restored across restarts.
//
// What every evaluation reads, State and Holds, lies first: the rest is
// read when the alert changes.
type Alert struct {
	State State
	// Holds says whether `when` held at the last evaluation (see
	// TrueSince).
	Holds bool
	// ActiveAt is when the condition started to hold (the pending start).
	ActiveAt time.Time
	// FiredAt is when the alert last went to firing.
	FiredAt time.Time
	// ResolvedAt is when the alert last resolved.
	ResolvedAt time.Time
	// LastSentAt is when people were last told about the firing alert.
	LastSentAt time.Time
	// ClearingSince is when a firing alert's resolve condition started to
	// hold; zero while it does not. keep_firing_for counts from here.
	ClearingSince time.Time
	// Value is the value that made the condition true at the last
	// evaluation where it held: the left side of the comparison that
	// decided it (comparison ValueOf of the rule's `when`), read at
	// ValueAt. A firing alert whose condition no longer holds (it waits
	// for clear_when, or keep_firing_for) keeps the value that made it
	// true.
	Value   float64
	ValueAt time.Time
	ValueOf int
	// TrueSince is when `when` began to hold in the run of evaluations
	// that ValueAt belongs to. See TrueFor.
	TrueSince time.Time
	// Summary is the rule's summary as rendered when the alert fired.
	Summary string
}

// Step advances the alert to time at, given the truth of the rule's
// `when` and of its `clear_when` (ignored without one).
//
// A pending alert needs `when` to hold at every evaluation, and fires once
// it has held for `for`: `for` counts only the time `when` holds, as
// Prometheus's does, so anything else (`when` known not to hold, or
// unknown) sends it back to inactive without anyone being told. A firing
// alert resolves when `when` is known not to hold — or, with clear_when,
// when clear_when holds and `when` does not — and that has lasted
// keep_firing_for: between the two conditions (the hysteresis band: a GPU
// at 83 C after 86 C is not cool yet) a firing alert stays firing, and a
// pending one is not kept. An unknown condition never resolves a firing
// alert: a missing reading, or windows refilling after a restart, say
// nothing about the problem.
func (a *Alert) Step(at time.Time, when, clear Truth, t Timing) Change {
	a.track(at, when)
	switch a.State {
	case StateInactive:
		if when != TruthTrue {
			return NoChange
		}
		// A new alert: the summary of the last one it fired is not its own.
		a.State, a.ActiveAt, a.Summary = StatePending, at, ""
		return a.fireIfHeld(at, t)
	case StatePending:
		if when != TruthTrue {
			a.State, a.ActiveAt = StateInactive, time.Time{}
			return NoChange
		}
		return a.fireIfHeld(at, t)
	case StateFiring:
		resolving := when == TruthFalse
		if t.HasClear {
			resolving = clear == TruthTrue && when != TruthTrue
		}
		if !resolving {
			a.ClearingSince = time.Time{}
			return NoChange
		}
		if a.ClearingSince.IsZero() {
			a.ClearingSince = at
		}
		if at.Sub(a.ClearingSince) < t.KeepFiringFor {
			return NoChange
		}
		a.State, a.ResolvedAt = StateInactive, at
		a.ActiveAt, a.ClearingSince = time.Time{}, time.Time{}
		return Resolved
	}
	return NoChange
}

// track follows the runs of evaluations at which `when` holds: TrueSince
// is when the current (or, once it stopped holding, the last) run began,
// and Holds whether it holds now.
func (a *Alert) track(at time.Time, when Truth) {
	holds := when == TruthTrue
	if holds != a.Holds { // written only when it changes: most alerts do not
		if holds {
			a.TrueSince = at
		}
		a.Holds = holds
	}
}

// TrueFor is how long the rule's `when` had held without a break when
// Value was read (at ValueAt): for a pending alert, how long it has been
// pending; 0 when it never held.
func (a *Alert) TrueFor() time.Duration {
	if a.TrueSince.IsZero() || a.ValueAt.Before(a.TrueSince) {
		return 0
	}
	return a.ValueAt.Sub(a.TrueSince)
}

func (a *Alert) fireIfHeld(at time.Time, t Timing) Change {
	if at.Sub(a.ActiveAt) < t.For {
		return NoChange
	}
	a.State, a.FiredAt, a.ClearingSince = StateFiring, at, time.Time{}
	return Fired
}

// ValueText formats the alert's Value, a value of rule r's condition, with
// its unit.
func (r *Rule) ValueText(a *Alert) string {
	if r == nil || r.When == nil {
		return Dimension{Base: Count}.Format(a.Value)
	}
	return r.When.FormatValue(a.ValueOf, a.Value)
}

// RepeatDue reports whether a firing alert should be announced again at
// time at, every `every` since it was last sent. every ≤ 0 means never.
func (a *Alert) RepeatDue(at time.Time, every time.Duration) bool {
	return a.State == StateFiring && every > 0 && !a.LastSentAt.IsZero() && at.Sub(a.LastSentAt) >= every
}
