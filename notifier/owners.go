package notifier

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
)

// OwnersConfig is a route's owners: block: whether and how the people who
// own an alert's holders (package people) are told, besides the route's
// receiver. A child route that leaves it out inherits its parent's.
type OwnersConfig struct {
	// Tell is dm (a direct message), mention (an @mention in the channel
	// message), both, or none (a child route that tells no owner).
	Tell string `yaml:"tell"`
	// Only holds a warning back from the channel while its owners can be
	// told by direct message: the channel hears of it when nobody can be
	// (unmapped, quiet hours, muted), when nobody answers in time, or when
	// the owner says it is not theirs. A critical alert is never held back.
	Only bool `yaml:"only"`
	// EscalateAfter is how long an owner has to answer a warning before
	// it is escalated (to the channel held back from, or to EscalateTo);
	// nil means DefaultEscalateAfter, 0 never. A critical alert goes to
	// the channel at once and is not escalated.
	EscalateAfter *time.Duration `yaml:"escalate_after"`
	// EscalateTo is a second person, by Slack user ID or email, who gets
	// a direct message when the owner does not answer; "" escalates to
	// the channel.
	EscalateTo string `yaml:"escalate_to"`
	// Snooze is how long "Still using it" quiets an idle alert before the
	// owner is asked again; 0 means DefaultSnooze.
	Snooze time.Duration `yaml:"snooze"`
}

// Defaults of a route's owners: block.
const (
	DefaultEscalateAfter = 30 * time.Minute
	DefaultSnooze        = 2 * time.Hour
	// MaxSnooze is the longest Snooze: an owner is asked again at least
	// once a day.
	MaxSnooze = 24 * time.Hour
)

// The ways to tell owners.
const (
	TellDM      = "dm"
	TellMention = "mention"
	TellBoth    = "both"
	TellNone    = "none"
)

// Owners is a route's owners: block with its defaults filled in, as a
// notification carries it to its receiver.
type Owners struct {
	DM            bool          `json:"dm,omitempty"`
	Mention       bool          `json:"mention,omitempty"`
	Only          bool          `json:"only,omitempty"`
	EscalateAfter time.Duration `json:"escalate_after,omitempty"`
	EscalateTo    string        `json:"escalate_to,omitempty"`
	Snooze        time.Duration `json:"snooze,omitempty"`
}

// newOwners fills in a block's defaults; nil for tell: none. problems
// gets what is wrong, at path.
func newOwners(path string, c *OwnersConfig, problems *[]RouteProblem) *Owners {
	o := &Owners{Only: c.Only, EscalateAfter: DefaultEscalateAfter, EscalateTo: strings.TrimSpace(c.EscalateTo), Snooze: c.Snooze}
	switch strings.ToLower(strings.TrimSpace(c.Tell)) {
	case "", TellBoth:
		o.DM, o.Mention = true, true
	case TellDM:
		o.DM = true
	case TellMention:
		o.Mention = true
	case TellNone:
		return nil
	default:
		*problems = append(*problems, RouteProblem{Path: path + ".tell", Msg: fmt.Sprintf("%q is not dm, mention, both or none", c.Tell)})
	}
	if c.EscalateAfter != nil {
		o.EscalateAfter = *c.EscalateAfter
	}
	if o.EscalateAfter < 0 {
		*problems = append(*problems, RouteProblem{Path: path + ".escalate_after", Msg: "is negative: give a duration such as 30m, or 0 to never escalate"})
	}
	if o.Only && !o.DM {
		*problems = append(*problems, RouteProblem{Path: path + ".only", Msg: "holds alerts back from the channel for the owners' direct messages, so it needs tell: dm or both"})
	}
	if o.Snooze == 0 {
		o.Snooze = DefaultSnooze
	}
	if o.Snooze < time.Minute || o.Snooze > MaxSnooze {
		*problems = append(*problems, RouteProblem{Path: path + ".snooze", Msg: fmt.Sprintf("%v is out of range: use 1m to 24h", c.Snooze)})
	}
	return o
}

// escalates reports whether a firing alert of this severity waits for
// its owners' answer, and for how long.
func (o *Owners) escalates(severity string) (time.Duration, bool) {
	if o == nil || !o.DM || o.EscalateAfter <= 0 || severity == string(rules.SeverityCritical) {
		return 0, false
	}
	// With the channel told and no second person, there is nobody to
	// escalate to.
	return o.EscalateAfter, o.Only || o.EscalateTo != ""
}

// AnswerKind is what an owner answered about an alert on their job.
type AnswerKind string

// The owners' answers, as the buttons of an owner's message give them.
const (
	// AnswerStillUsing: a GPU held idle is still in use; the alert is
	// snoozed and the owner asked again after the route's snooze.
	AnswerStillUsing AnswerKind = "still_using"
	// AnswerDone: the owner is done with the GPU; the alert resolves
	// when its memory frees.
	AnswerDone AnswerKind = "done"
	// AnswerNotMine: the job is not the owner's; the alert goes to the
	// channel.
	AnswerNotMine AnswerKind = "not_mine"
	// AnswerWatching: the owner watches the job (near OOM, leaking); no
	// more reminders.
	AnswerWatching AnswerKind = "watching"
)

// ParseAnswerKind reads an answer as AnswerKind spells it.
func ParseAnswerKind(s string) (AnswerKind, bool) {
	k := AnswerKind(s)
	return k, slices.Contains([]AnswerKind{AnswerStillUsing, AnswerDone, AnswerNotMine, AnswerWatching}, k)
}

// Answer is an owner's answer to an alert: who, what, when (in the
// alerts' time), and the click it came from.
type Answer struct {
	Kind AnswerKind `json:"kind"`
	// By names who answered, "alice (U0123ABCD)"; ByID is their Slack ID.
	By   string    `json:"by"`
	ByID string    `json:"by_id"`
	At   time.Time `json:"at"`
	// Until is when the owner is asked again (still using it).
	Until time.Time `json:"until,omitzero"`
	// Click identifies the button press, so Slack sending it again acts
	// once.
	Click string `json:"click"`
}

// Quiets reports whether the answer stops reminders: the owner is on it.
func (a *Answer) Quiets() bool {
	return a != nil && a.Kind != AnswerNotMine
}

// Text says the answer for people, with who as the message names them
// and times as when writes them (nil: "Mon 16:00 UTC"): "<@U0123> is
// still using it · asked again at Mon 16:00 UTC".
func (a *Answer) Text(who string, when func(time.Time) string) string {
	if when == nil {
		when = func(t time.Time) string { return t.UTC().Format("Mon 15:04 MST") }
	}
	switch a.Kind {
	case AnswerStillUsing:
		text := who + " is still using it"
		if !a.Until.IsZero() {
			text += " · asked again at " + when(a.Until)
		}
		return text
	case AnswerDone:
		return who + " says done: it resolves when the memory frees"
	case AnswerNotMine:
		return who + " says it is not theirs"
	case AnswerWatching:
		return who + " is watching it"
	}
	return who + " answered"
}

// EventKind is the kind of news an owner event tells.
type EventKind string

// The owner events.
const (
	// EventAnswer: an owner answered; the alert's messages say so.
	EventAnswer EventKind = "answer"
	// EventEscalate: nobody answered in time, or the owner said it is not
	// theirs; the alert goes to the channel, or to the second person.
	EventEscalate EventKind = "escalate"
	// EventAsk: a snooze is over and the alert still fires: the owner is
	// asked again.
	EventAsk EventKind = "ask"
)

// OwnerEvent is news about an alert's owners rather than a transition of
// the alert: a notification that carries one has the alert as it was last
// sent, as Alerts[0].
type OwnerEvent struct {
	Kind EventKind `json:"kind"`
	// Why says why an escalation happens: "no answer within 30m",
	// "<@U0123> says it is not theirs".
	Why string `json:"why,omitempty"`
}

// Idle reports whether a rule's alerts are about a GPU held idle (its
// condition reads utilization): its owner is asked whether they still use
// it, rather than told to watch.
func Idle(r *rules.Rule) bool {
	if r == nil || r.When == nil {
		return false
	}
	for _, m := range r.When.Metrics() {
		switch m {
		case rules.MetricTemperature, rules.MetricMissingFor:
			return false
		}
	}
	return slices.ContainsFunc(r.When.Metrics(), func(m rules.Metric) bool {
		return m == rules.MetricUtilizationGPU || m == rules.MetricUtilizationMemory
	})
}
