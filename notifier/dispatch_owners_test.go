package notifier_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/store"
)

// ownerOutbox describes a commit's notifications as outbox does, with an
// owner event's kind in place of the status ("team GPUIdleButHeld
// escalate 0: no answer within 30m").
func ownerOutbox(t testing.TB, c *notifier.Commit) []string {
	t.Helper()
	var out []string
	for _, n := range notifications(t, c) {
		if n.Owners == nil {
			t.Errorf("notification %s carries no owners: block, want its route's", n.GroupKey)
		}
		if n.Event == nil {
			out = append(out, describe(t, &n))
			continue
		}
		a := n.Alerts[0]
		s := n.Receiver + " " + a.Name + " " + string(n.Event.Kind) + " " + a.UUID[len(a.UUID)-1:]
		if n.Event.Why != "" {
			s += ": " + n.Event.Why
		}
		out = append(out, s)
	}
	return out
}

func checkOwnerOutbox(t testing.TB, when string, c *notifier.Commit, want ...string) {
	t.Helper()
	if got := ownerOutbox(t, c); !slices.Equal(got, want) {
		t.Errorf("%s: got outbox %q, want %q", when, got, want)
	}
}

// ownerRoute tells owners by direct message only and holds warnings back
// from the channel for 30 minutes.
func ownerRoute() notifier.RouteConfig {
	return notifier.RouteConfig{Receiver: "team", GroupWait: ptr(0), RepeatInterval: ptr(time.Hour),
		Owners: &notifier.OwnersConfig{Tell: "dm", Only: true}}
}

func TestOwnersEscalateWithoutAnswer(t *testing.T) {
	d := newDispatcher(t, ownerRoute(), nil)
	idle := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	hot := newRule("GPUHot", rules.SeverityCritical, nil)
	checkOwnerOutbox(t, "firing", d.Dispatch(t0, []rules.Transition{fires(idle, 0, t0), fires(hot, 1, t0)}),
		"team GPUHot firing 1", "team GPUIdleButHeld firing 0")
	checkOwnerOutbox(t, "29m later", d.Dispatch(t0.Add(29*time.Minute), nil))
	checkOwnerOutbox(t, "30m later", d.Dispatch(t0.Add(30*time.Minute), nil),
		"team GPUIdleButHeld escalate 0: no answer within 30m") // a critical alert is never held back: it does not escalate
	checkOwnerOutbox(t, "an hour later", d.Dispatch(t0.Add(59*time.Minute), nil))
}

func TestOwnersStillUsingSnoozesAndAsksAgain(t *testing.T) {
	d := newDispatcher(t, ownerRoute(), nil)
	idle := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	d.Dispatch(t0, []rules.Transition{fires(idle, 0, t0)})
	at := t0.Add(10 * time.Minute)
	d.Dispatch(at, nil)
	c, ans, err := d.Answer(key("GPUIdleButHeld", 0), notifier.Answer{Kind: notifier.AnswerStillUsing, By: "bob (U0BOB)", ByID: "U0BOB", Click: "1700000000.1"})
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if !ans.At.Equal(at) || !ans.Until.Equal(at.Add(2*time.Hour)) {
		t.Errorf("answer at %v until %v, want at the latest evaluation %v, until 2h later", ans.At, ans.Until, at)
	}
	checkOwnerOutbox(t, "the answer", c, "team GPUIdleButHeld answer 0")
	if a := d.Answered(key("GPUIdleButHeld", 0)); a == nil || a.Kind != notifier.AnswerStillUsing {
		t.Errorf("Answered: got %+v, want still using", a)
	}
	c, again, err := d.Answer(key("GPUIdleButHeld", 0), notifier.Answer{Kind: notifier.AnswerStillUsing, By: "bob (U0BOB)", ByID: "U0BOB", Click: "1700000000.1"})
	if err != nil || !c.Empty() || again != ans {
		t.Errorf("the same press again: got %+v, %+v, %v; want nothing done and the first answer", c, again, err)
	}

	checkOwnerOutbox(t, "no escalation once answered", d.Dispatch(t0.Add(45*time.Minute), nil))
	reminder := t0.Add(time.Hour)
	checkOwnerOutbox(t, "no reminder while snoozed", d.Dispatch(reminder, []rules.Transition{repeats(idle, 0, t0, reminder)}))
	checkOwnerOutbox(t, "snooze over", d.Dispatch(at.Add(2*time.Hour), nil), "team GPUIdleButHeld ask 0")
	if a := d.Answered(key("GPUIdleButHeld", 0)); a != nil {
		t.Errorf("Answered after the snooze: got %+v, want none", a)
	}
	checkOwnerOutbox(t, "no answer to the question", d.Dispatch(at.Add(2*time.Hour+30*time.Minute), nil),
		"team GPUIdleButHeld escalate 0: no answer within 30m")
}

func TestOwnersNotMineEscalatesAtOnce(t *testing.T) {
	d := newDispatcher(t, ownerRoute(), nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityWarning, nil)
	d.Dispatch(t0, []rules.Transition{fires(leak, 3, t0)})
	c, _, err := d.Answer(key("GPUMemoryLeak", 3), notifier.Answer{Kind: notifier.AnswerNotMine, By: "alice (U0ALICE)", ByID: "U0ALICE", Click: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	checkOwnerOutbox(t, "not mine", c, "team GPUMemoryLeak answer 3", "team GPUMemoryLeak escalate 3: <@U0ALICE> says it is not theirs")
	checkOwnerOutbox(t, "30m later", d.Dispatch(t0.Add(30*time.Minute), nil))
	reminder := t0.Add(time.Hour)
	checkOwnerOutbox(t, "not theirs: reminders go on", d.Dispatch(reminder, []rules.Transition{repeats(leak, 3, t0, reminder)}), "team GPUMemoryLeak repeat 3")
}

func TestOwnersAnswerNeedsOwnedFiringAlert(t *testing.T) {
	d := newDispatcher(t, ownerRoute(), nil)
	plain := newDispatcher(t, notifier.RouteConfig{Receiver: "team"}, nil)
	idle := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	plain.Dispatch(t0, []rules.Transition{fires(idle, 0, t0)})
	if _, _, err := plain.Answer(key("GPUIdleButHeld", 0), notifier.Answer{Kind: notifier.AnswerDone}); err == nil {
		t.Errorf("answering an alert whose owners no route tells: got no error")
	}
	d.Dispatch(t0, []rules.Transition{fires(idle, 0, t0)})
	end := t0.Add(time.Hour)
	c := d.Dispatch(end, []rules.Transition{resolves(idle, 0, t0, end)})
	if !slices.Contains(c.Delete[notifier.BucketOwned], key("GPUIdleButHeld", 0)) {
		t.Errorf("resolve: got deletes %v, want the owned record deleted", c.Delete)
	}
	if _, _, err := d.Answer(key("GPUIdleButHeld", 0), notifier.Answer{Kind: notifier.AnswerDone}); err == nil || !strings.Contains(err.Error(), "not firing") {
		t.Errorf("answering a resolved alert: got %v, want not firing", err)
	}
}

// TestOwnersSurviveRestart: an escalation waiting when gpuwatch stops
// happens after the restart, once.
func TestOwnersSurviveRestart(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := newDispatcher(t, ownerRoute(), nil)
	idle := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	commitTo(t, db, d.Dispatch(t0, []rules.Transition{fires(idle, 0, t0)}))

	d = restart(t, db, ownerRoute())
	owned, err := db.All(notifier.BucketOwned)
	if err != nil {
		t.Fatal(err)
	}
	d.RestoreOwned(owned, keepNone(t))
	c := d.Dispatch(t0.Add(31*time.Minute), nil)
	checkOwnerOutbox(t, "after the restart", c, "team GPUIdleButHeld escalate 0: no answer within 30m")
	commitTo(t, db, c)
	d = restart(t, db, ownerRoute())
	owned, _ = db.All(notifier.BucketOwned)
	d.RestoreOwned(owned, keepNone(t))
	checkOwnerOutbox(t, "after a second restart", d.Dispatch(t0.Add(40*time.Minute), nil))
}

func TestOwnersRouteProblems(t *testing.T) {
	for _, tc := range []struct {
		owners notifier.OwnersConfig
		want   string
	}{
		{notifier.OwnersConfig{Tell: "sms"}, `route.owners.tell: "sms" is not dm, mention, both or none`},
		{notifier.OwnersConfig{Tell: "mention", Only: true}, "route.owners.only: holds alerts back"},
		{notifier.OwnersConfig{EscalateAfter: ptr(-time.Minute)}, "route.owners.escalate_after: is negative"},
		{notifier.OwnersConfig{Snooze: 48 * time.Hour}, "route.owners.snooze: 48h0m0s is out of range"},
	} {
		_, problems := notifier.NewRoute(notifier.RouteConfig{Receiver: "team", Owners: &tc.owners})
		if len(problems) != 1 || !strings.HasPrefix(problems[0].Error(), tc.want) {
			t.Errorf("%+v: got problems %v, want one starting %q", tc.owners, problems, tc.want)
		}
	}
	r := newTestRoute(t, notifier.RouteConfig{Receiver: "team", Owners: &notifier.OwnersConfig{},
		Routes: []notifier.RouteConfig{{Matchers: []string{`alert="A"`}}, {Matchers: []string{`alert="B"`}, Owners: &notifier.OwnersConfig{Tell: "none"}}}})
	if o := r.Routes[0].Owners; o == nil || !o.DM || !o.Mention || o.EscalateAfter != 30*time.Minute || o.Snooze != 2*time.Hour {
		t.Errorf("an inheriting child: got owners %+v, want the root's defaults (both, 30m, 2h)", o)
	}
	if r.Routes[1].Owners != nil {
		t.Errorf("a child with tell: none: got owners %+v, want none", r.Routes[1].Owners)
	}
}

// BenchmarkDispatchOwners is BenchmarkDispatch on a route that tells
// owners: each firing is recorded for its escalation.
func BenchmarkDispatchOwners(b *testing.B) {
	d := newDispatcher(b, ownerRoute(), nil)
	r := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	b.ReportAllocs()
	at := t0
	for b.Loop() {
		at = at.Add(time.Minute)
		d.Dispatch(at, []rules.Transition{fires(r, 0, at), resolves(r, 0, at, at.Add(time.Second))})
	}
}
