package notifier_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/store"
)

// t0 is when the dispatcher tests begin.
var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func newTestRoute(t testing.TB, c notifier.RouteConfig) *notifier.Route {
	t.Helper()
	r, problems := notifier.NewRoute(c)
	if len(problems) > 0 {
		t.Fatalf("NewRoute: got problems %v, want none", problems)
	}
	return r
}

// muteNothing is a Muter without silences.
type muteNothing struct{}

func (muteNothing) Mutes(map[string]string, time.Time) (string, bool) { return "", false }

func newDispatcher(t testing.TB, c notifier.RouteConfig, m notifier.Muter) *notifier.Dispatcher {
	t.Helper()
	if m == nil {
		m = muteNothing{}
	}
	return notifier.NewDispatcher(newTestRoute(t, c), m, discard())
}

func newRule(name string, sev rules.Severity, labels map[string]string, receivers ...string) *rules.Rule {
	return &rules.Rule{Name: name, Severity: sev, Labels: labels, Receivers: receivers}
}

// transition is what the engine emits for rule r on GPU gpu of node1.
func transition(r *rules.Rule, gpu int, state rules.State, repeat bool, startsAt, at time.Time) rules.Transition {
	uuid := fmt.Sprintf("GPU-%04d", gpu)
	labels := maps.Clone(r.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, map[string]string{"alert": r.Name, "severity": string(r.Severity),
		"host": "node1", "gpu": strconv.Itoa(gpu), "uuid": uuid})
	tr := rules.Transition{
		At: at, Rule: r, Alert: r.Name, State: state, Repeat: repeat, Severity: r.Severity,
		Host: "node1", GPU: gpu, UUID: uuid, GPUName: "NVIDIA H100 80GB HBM3", Labels: labels,
		StartsAt: startsAt, Value: 97, ValueText: "97%", Trend: math.NaN(),
		TimeToFull: time.Duration(math.MinInt64),
	}
	if state != rules.StateFiring {
		tr.EndsAt = at
	}
	return tr
}

func fires(r *rules.Rule, gpu int, at time.Time) rules.Transition {
	return transition(r, gpu, rules.StateFiring, false, at, at)
}

func repeats(r *rules.Rule, gpu int, startsAt, at time.Time) rules.Transition {
	return transition(r, gpu, rules.StateFiring, true, startsAt, at)
}

func resolves(r *rules.Rule, gpu int, startsAt, at time.Time) rules.Transition {
	return transition(r, gpu, rules.StateInactive, false, startsAt, at)
}

// outbox describes a commit's notifications as "receiver alert kind gpus"
// (kind is firing, resolved or repeat), receivers in name order, each
// receiver's notifications in outbox order.
func outbox(t testing.TB, c *notifier.Commit) []string {
	t.Helper()
	var out []string
	for _, n := range notifications(t, c) {
		out = append(out, describe(t, &n))
	}
	return out
}

// notifications decodes a commit's notifications, receivers in name
// order, each receiver's in outbox order.
func notifications(t testing.TB, c *notifier.Commit) []notifier.Notification {
	t.Helper()
	var out []notifier.Notification
	for _, rcv := range slices.Sorted(maps.Keys(c.Outbox)) {
		for _, raw := range c.Outbox[rcv] {
			var n notifier.Notification
			if err := json.Unmarshal(raw, &n); err != nil {
				t.Fatalf("outbox of %s: %v", rcv, err)
			}
			out = append(out, n)
		}
	}
	return out
}

func describe(t testing.TB, n *notifier.Notification) string {
	t.Helper()
	if len(n.Alerts) == 0 {
		t.Fatalf("notification %s has no alerts", n.GroupKey)
	}
	kind := string(n.Status)
	gpus := make([]string, len(n.Alerts))
	for i, a := range n.Alerts {
		gpus[i] = strconv.Itoa(a.GPU)
		if a.Status != n.Status {
			t.Errorf("notification %s: alert on GPU %d has status %s, want %s", n.GroupKey, a.GPU, a.Status, n.Status)
		}
		if a.Repeat {
			kind = "repeat"
		}
	}
	return fmt.Sprintf("%s %s %s %s", n.Receiver, n.Alerts[0].Name, kind, strings.Join(gpus, ","))
}

func checkOutbox(t testing.TB, when string, c *notifier.Commit, want ...string) {
	t.Helper()
	if got := outbox(t, c); !slices.Equal(got, want) {
		t.Errorf("%s: got outbox %q, want %q", when, got, want)
	}
}

// dispatchWait dispatches ts at at and again an hour later, past every
// group_wait, and describes what both commits sent.
func dispatchWait(t testing.TB, d *notifier.Dispatcher, at time.Time, ts ...rules.Transition) []string {
	t.Helper()
	got := outbox(t, d.Dispatch(at, ts))
	return append(got, outbox(t, d.Dispatch(at.Add(time.Hour), nil))...)
}

func TestCommitRecords(t *testing.T) {
	var c notifier.Commit
	if !c.Empty() {
		t.Errorf("new commit: got Empty() false, want true")
	}
	c.PutRecord("b", "k", []byte("v1"))
	c.DeleteRecord("b", "k")
	if _, ok := c.Put["b"]["k"]; ok || !slices.Equal(c.Delete["b"], []string{"k"}) {
		t.Errorf("put then delete: got put %v, delete %v, want only the delete", c.Put, c.Delete)
	}
	c.PutRecord("b", "k", []byte("v2"))
	if got := string(c.Put["b"]["k"]); got != "v2" || len(c.Delete["b"]) != 0 {
		t.Errorf("delete then put: got put %q, delete %v, want only the put of v2", got, c.Delete["b"])
	}
	if c.Empty() {
		t.Errorf("commit with a record: got Empty() true, want false")
	}
}

func TestDispatchRouting(t *testing.T) {
	cfg := notifier.RouteConfig{
		Receiver: "default",
		Routes: []notifier.RouteConfig{
			{Matchers: []string{`severity="critical"`}, Receiver: "pager", Continue: true},
			{Matchers: []string{`alert="GPUHot"`}, Receiver: "hw",
				Routes: []notifier.RouteConfig{{Matchers: []string{`gpu="0"`}, Receiver: "hw-gpu0"}}},
			{Matchers: []string{`team="ml"`}, Receiver: "ml"},
		},
	}
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	hotCritical := newRule("GPUHot", rules.SeverityCritical, nil)
	idle := newRule("GPUIdleButHeld", rules.SeverityWarning, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, map[string]string{"team": "ml"})
	overridden := newRule("GPUMemoryLeak", rules.SeverityCritical, map[string]string{"team": "ml"}, "ops", "console")
	tests := []struct {
		name string
		tr   rules.Transition
		want []string
	}{
		{"no child matches: the default", fires(idle, 1, t0), []string{"default GPUIdleButHeld firing 1"}},
		{"first match", fires(hot, 1, t0), []string{"hw GPUHot firing 1"}},
		{"nested match", fires(hot, 0, t0), []string{"hw-gpu0 GPUHot firing 0"}},
		{"continue, then first match", fires(hotCritical, 3, t0), []string{"hw GPUHot firing 3", "pager GPUHot firing 3"}},
		{"continue, then a rule label", fires(leak, 2, t0), []string{"ml GPUMemoryLeak firing 2", "pager GPUMemoryLeak firing 2"}},
		{"the rule's receivers replace the routes", fires(overridden, 2, t0),
			[]string{"console GPUMemoryLeak firing 2", "ops GPUMemoryLeak firing 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDispatcher(t, cfg, nil)
			if got := dispatchWait(t, d, t0, tt.tr); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// waitingGroup decodes a group the commit keeps waiting.
func waitingGroup(t testing.TB, c *notifier.Commit, key string) (due time.Time, n notifier.Notification) {
	t.Helper()
	raw, ok := c.Put[notifier.BucketGroups][key]
	if !ok {
		t.Fatalf("commit puts groups %v, want %q among them", slices.Sorted(maps.Keys(c.Put[notifier.BucketGroups])), key)
	}
	var g struct {
		Due          time.Time             `json:"due"`
		Notification notifier.Notification `json:"notification"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("waiting group %q: %v", key, err)
	}
	return g.Due, g.Notification
}

func TestDispatchGroupWait(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(30 * time.Second)}, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	const leakKey, hotKey = "team/GPUMemoryLeak/firing", "team/GPUHot/firing"
	steps := []struct {
		at        time.Duration
		ts        []rules.Transition
		want      []string
		waiting   string // a group the commit must save, with its GPUs
		gpus      string
		delivered []string // groups the commit must delete
	}{
		{at: 0, ts: []rules.Transition{fires(leak, 0, t0)}, waiting: leakKey, gpus: "0"},
		{at: 5 * time.Second, ts: []rules.Transition{fires(hot, 0, t0.Add(5*time.Second))}, waiting: hotKey, gpus: "0"},
		{at: 10 * time.Second, ts: []rules.Transition{fires(leak, 1, t0.Add(10*time.Second))}, waiting: leakKey, gpus: "0,1"},
		{at: 20 * time.Second, ts: []rules.Transition{fires(leak, 2, t0.Add(20*time.Second))}, waiting: leakKey, gpus: "0,1,2"},
		{at: 29 * time.Second},
		{at: 30 * time.Second, want: []string{"team GPUMemoryLeak firing 0,1,2"}, delivered: []string{leakKey}},
		{at: 34 * time.Second},
		{at: 35 * time.Second, want: []string{"team GPUHot firing 0"}, delivered: []string{hotKey}},
		{at: time.Hour},
	}
	for _, s := range steps {
		when := fmt.Sprintf("t0+%v", s.at)
		c := d.Dispatch(t0.Add(s.at), s.ts)
		checkOutbox(t, when, c, s.want...)
		if s.waiting != "" {
			due, n := waitingGroup(t, c, s.waiting)
			if got := describe(t, &n); got != "team "+strings.Split(s.waiting, "/")[1]+" firing "+s.gpus {
				t.Errorf("%s: got waiting group %q, want GPUs %s", when, got, s.gpus)
			}
			if want := n.CreatedAt.Add(30 * time.Second); !due.Equal(want) {
				t.Errorf("%s: group %s due at %v, want %v", when, s.waiting, due, want)
			}
		}
		if got := c.Delete[notifier.BucketGroups]; !slices.Equal(got, s.delivered) {
			t.Errorf("%s: got groups deleted %q, want %q", when, got, s.delivered)
		}
		for _, key := range s.delivered {
			if _, ok := c.Put[notifier.BucketGroups][key]; ok {
				t.Errorf("%s: sent group %s is still put", when, key)
			}
		}
		for _, tr := range s.ts {
			if _, ok := c.Put[notifier.BucketSent]["team/"+notifier.AlertKey(tr.Host, tr.Alert, tr.UUID)]; !ok {
				t.Errorf("%s: the commit does not record that team is told %s on GPU %d", when, tr.Alert, tr.GPU)
			}
		}
	}
}

func TestDispatchResolved(t *testing.T) {
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	base := notifier.RouteConfig{Receiver: "team", GroupWait: ptr(30 * time.Second)}
	withPager := base
	withPager.Routes = []notifier.RouteConfig{{Matchers: []string{`severity="critical"`}, Receiver: "pager", Continue: true}}

	t.Run("only those told hear of the end", func(t *testing.T) {
		sil, err := notifier.NewSilences(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := notifier.ParseMatchers(`gpu="1"`)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sil.Add(notifier.Silence{Matchers: ms, StartsAt: t0, EndsAt: t0.Add(time.Hour)}, t0); err != nil {
			t.Fatal(err)
		}
		d := newDispatcher(t, base, sil)
		// GPU 1 is silenced; pager is not routed yet when the alerts fire.
		got := dispatchWait(t, d, t0, fires(leak, 0, t0), fires(leak, 1, t0))
		if want := []string{"team GPUMemoryLeak firing 0"}; !slices.Equal(got, want) {
			t.Fatalf("firing: got %q, want %q", got, want)
		}
		d.SetRoute(newTestRoute(t, withPager))
		end := t0.Add(2 * time.Hour) // after the silence
		c := d.Dispatch(end, []rules.Transition{resolves(leak, 0, t0, end), resolves(leak, 1, t0, end)})
		if key := "team/" + notifier.AlertKey("node1", "GPUMemoryLeak", "GPU-0000"); !slices.Contains(c.Delete[notifier.BucketSent], key) {
			t.Errorf("resolve: got sent records deleted %q, want %q among them", c.Delete[notifier.BucketSent], key)
		}
		got = append(outbox(t, c), outbox(t, d.Dispatch(end.Add(time.Hour), nil))...)
		if want := []string{"team GPUMemoryLeak resolved 0"}; !slices.Equal(got, want) {
			t.Errorf("resolved: got %q, want %q", got, want)
		}
	})

	t.Run("a resolve while its firing waits", func(t *testing.T) {
		d := newDispatcher(t, base, nil)
		checkOutbox(t, "t0", d.Dispatch(t0, []rules.Transition{fires(leak, 0, t0), fires(hot, 0, t0)}))
		at := t0.Add(10 * time.Second)
		c := d.Dispatch(at, []rules.Transition{resolves(leak, 0, t0, at)})
		checkOutbox(t, "resolved at t0+10s", c, "team GPUMemoryLeak firing 0", "team GPUMemoryLeak resolved 0")
		// The other rule's group keeps waiting for its own group_wait.
		checkOutbox(t, "t0+29s", d.Dispatch(t0.Add(29*time.Second), nil))
		checkOutbox(t, "t0+30s", d.Dispatch(t0.Add(30*time.Second), nil), "team GPUHot firing 0")
		checkOutbox(t, "t0+1h", d.Dispatch(t0.Add(time.Hour), nil))
	})

	t.Run("a resolve while a reminder waits", func(t *testing.T) {
		d := newDispatcher(t, base, nil)
		got := dispatchWait(t, d, t0, fires(leak, 0, t0))
		if want := []string{"team GPUMemoryLeak firing 0"}; !slices.Equal(got, want) {
			t.Fatalf("firing: got %q, want %q", got, want)
		}
		at := t0.Add(4 * time.Hour)
		checkOutbox(t, "reminder", d.Dispatch(at, []rules.Transition{repeats(leak, 0, t0, at)}))
		end := at.Add(time.Second)
		c := d.Dispatch(end, []rules.Transition{resolves(leak, 0, t0, end)})
		checkOutbox(t, "resolved", c, "team GPUMemoryLeak repeat 0", "team GPUMemoryLeak resolved 0")
	})

	t.Run("resolved alerts of one rule travel together", func(t *testing.T) {
		d := newDispatcher(t, base, nil)
		dispatchWait(t, d, t0, fires(leak, 0, t0), fires(leak, 1, t0))
		at := t0.Add(2 * time.Hour)
		checkOutbox(t, "first resolve", d.Dispatch(at, []rules.Transition{resolves(leak, 0, t0, at)}))
		at2 := at.Add(10 * time.Second)
		checkOutbox(t, "second resolve", d.Dispatch(at2, []rules.Transition{resolves(leak, 1, t0, at2)}))
		checkOutbox(t, "group_wait over", d.Dispatch(at.Add(30*time.Second), nil), "team GPUMemoryLeak resolved 0,1")
	})
}

func TestDispatchSilence(t *testing.T) {
	sil, err := notifier.NewSilences(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := notifier.ParseMatchers(`alert="GPUHot", gpu="0"`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sil.Add(notifier.Silence{Matchers: ms, StartsAt: t0, EndsAt: t0.Add(2 * time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(10 * time.Second), RepeatInterval: ptr(time.Hour)}, sil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	steps := []struct {
		name string
		ts   []rules.Transition
		at   time.Duration
		want []string
	}{
		{"muted firing", []rules.Transition{fires(hot, 0, t0), fires(hot, 1, t0)}, 0, []string{"team GPUHot firing 1"}},
		{"muted reminder", []rules.Transition{repeats(hot, 0, t0, t0.Add(time.Hour)), repeats(hot, 1, t0, t0.Add(time.Hour))},
			time.Hour, []string{"team GPUHot repeat 1"}},
		{"silence over: news, not a reminder", []rules.Transition{repeats(hot, 0, t0, t0.Add(2*time.Hour))},
			2 * time.Hour, []string{"team GPUHot firing 0"}},
		{"then reminders", []rules.Transition{repeats(hot, 0, t0, t0.Add(3*time.Hour))},
			3 * time.Hour, []string{"team GPUHot repeat 0"}},
	}
	for _, s := range steps {
		if got := dispatchWait(t, d, t0.Add(s.at), s.ts...); !slices.Equal(got, s.want) {
			t.Errorf("%s: got %q, want %q", s.name, got, s.want)
		}
	}
}

func TestDispatchRepeats(t *testing.T) {
	cfg := notifier.RouteConfig{
		Receiver:  "default",
		GroupWait: ptr(time.Second),
		Routes: []notifier.RouteConfig{
			{Matchers: []string{`alert="GPUMemoryLeak"`}, Receiver: "fast", RepeatInterval: ptr(time.Hour), Continue: true},
			{Matchers: []string{`alert="GPUMemoryLeak"`}, Receiver: "slow", RepeatInterval: ptr(4 * time.Hour)},
		},
	}
	d := newDispatcher(t, cfg, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	intervals := []struct {
		labels map[string]string
		want   time.Duration
	}{
		{map[string]string{"alert": "GPUMemoryLeak"}, time.Hour},
		{map[string]string{"alert": "GPUHot"}, notifier.DefaultRepeatInterval},
	}
	for _, tt := range intervals {
		if got := d.RepeatInterval(tt.labels); got != tt.want {
			t.Errorf("RepeatInterval(%v): got %v, want %v", tt.labels, got, tt.want)
		}
	}
	got := dispatchWait(t, d, t0, fires(leak, 0, t0))
	if want := []string{"fast GPUMemoryLeak firing 0", "slow GPUMemoryLeak firing 0"}; !slices.Equal(got, want) {
		t.Fatalf("firing: got %q, want %q", got, want)
	}
	// The engine reminds at the shortest interval, at the samples' times,
	// which land a little after each hour.
	for hour := 1; hour <= 8; hour++ {
		at := t0.Add(time.Duration(hour)*time.Hour + time.Duration(hour)*time.Second)
		want := []string{"fast GPUMemoryLeak repeat 0"}
		if hour%4 == 0 {
			want = append(want, "slow GPUMemoryLeak repeat 0")
		}
		got := outbox(t, d.Dispatch(at, []rules.Transition{repeats(leak, 0, t0, at)}))
		got = append(got, outbox(t, d.Dispatch(at.Add(time.Second), nil))...)
		if !slices.Equal(got, want) {
			t.Errorf("reminder at hour %d: got %q, want %q", hour, got, want)
		}
	}
}

func TestDispatchRuleRepeatInterval(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(time.Second), RepeatInterval: ptr(4 * time.Hour)}, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	leak.RepeatInterval = 30 * time.Minute
	dispatchWait(t, d, t0, fires(leak, 0, t0))
	at := t0.Add(30 * time.Minute)
	got := append(outbox(t, d.Dispatch(at, []rules.Transition{repeats(leak, 0, t0, at)})),
		outbox(t, d.Dispatch(at.Add(time.Second), nil))...)
	if want := []string{"team GPUMemoryLeak repeat 0"}; !slices.Equal(got, want) {
		t.Errorf("a reminder at the rule's repeat_interval: got %q, want %q", got, want)
	}
}

// commitTo writes a commit to the store as the daemon does.
func commitTo(t testing.TB, db *store.DB, c *notifier.Commit) {
	t.Helper()
	if err := db.Commit(c.Outbox, c.Put, c.Delete); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// restart builds a dispatcher from what the store holds.
func restart(t testing.TB, db *store.DB, c notifier.RouteConfig) *notifier.Dispatcher {
	t.Helper()
	groups, err := db.All(notifier.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := db.All(notifier.BucketSent)
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(t, c, nil)
	d.Restore(groups, sent, keepNone(t))
	return d
}

// keepNone is a SetAsideFunc for records that must all be readable.
func keepNone(t testing.TB) notifier.SetAsideFunc {
	return func(bucket, key string, why error) { t.Errorf("record %s %q set aside: %v", bucket, key, why) }
}

func TestDispatchRestore(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := notifier.RouteConfig{Receiver: "team", GroupWait: ptr(30 * time.Second)}
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)

	d := newDispatcher(t, cfg, nil)
	early := t0.Add(-time.Hour)
	commitTo(t, db, d.Dispatch(early, []rules.Transition{fires(hot, 0, early)}))
	c := d.Dispatch(early.Add(30*time.Second), nil)
	checkOutbox(t, "before the restart", c, "team GPUHot firing 0")
	commitTo(t, db, c)
	commitTo(t, db, d.Dispatch(t0, []rules.Transition{fires(leak, 0, t0), fires(leak, 1, t0)}))

	d = restart(t, db, cfg)
	checkOutbox(t, "restored, before group_wait", d.Dispatch(t0.Add(29*time.Second), nil))
	c = d.Dispatch(t0.Add(30*time.Second), nil)
	checkOutbox(t, "restored, group_wait over", c, "team GPUMemoryLeak firing 0,1")
	commitTo(t, db, c)
	if n, err := db.Count(notifier.BucketGroups); err != nil || n != 0 {
		t.Errorf("after the group went out: got %d waiting groups in the store (%v), want 0", n, err)
	}
	end := t0.Add(time.Minute)
	got := dispatchWait(t, d, end, resolves(hot, 0, early, end), resolves(hot, 1, early, end))
	if want := []string{"team GPUHot resolved 0"}; !slices.Equal(got, want) {
		t.Errorf("resolves after the restart: got %q, want %q (GPU 1 was never told)", got, want)
	}
}

// TestDispatchRestoreSetsAside: a record Restore cannot read is set
// aside, saying why, and the others are restored.
func TestDispatchRestoreSetsAside(t *testing.T) {
	tests := []struct {
		name         string
		groups, sent map[string][]byte
		want         string // bucket key: why
	}{
		{"bad group", map[string][]byte{"team/GPUHot/firing": []byte("{")}, nil, "groups team/GPUHot/firing: not a waiting group"},
		{"bad sent time", nil, map[string][]byte{"team/node1/GPUHot/GPU-0": []byte("yesterday")}, "sent team/node1/GPUHot/GPU-0: not a time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDispatcher(t, notifier.RouteConfig{Receiver: "team"}, nil)
			var got []string
			d.Restore(tt.groups, tt.sent, func(bucket, key string, why error) { got = append(got, bucket+" "+key+": "+why.Error()) })
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
				t.Errorf("set aside %q, want one record: %s…", got, tt.want)
			}
		})
	}
}

func TestDispatchWithoutRule(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team"}, nil)
	tr := fires(newRule("GPUHot", rules.SeverityWarning, nil), 0, t0)
	tr.Rule = nil
	if got, want := dispatchWait(t, d, t0, tr), []string{"team GPUHot firing 0"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func BenchmarkDispatch(b *testing.B) {
	d := newDispatcher(b, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(time.Second)}, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	b.ReportAllocs()
	at := t0
	for b.Loop() {
		at = at.Add(time.Second)
		ts := []rules.Transition{fires(leak, 0, at), fires(leak, 1, at)}
		d.Dispatch(at, ts)
		d.Dispatch(at, []rules.Transition{resolves(leak, 0, at, at), resolves(leak, 1, at, at)})
	}
}

func ptr(d time.Duration) *time.Duration { return &d }

// TestCommitAbsorb: a commit the store refused is written with the next
// one; its notifications come first and the later commit's records win.
func TestCommitAbsorb(t *testing.T) {
	earlier := &notifier.Commit{Outbox: map[string][][]byte{"team": {[]byte("1")}, "ops": {[]byte("a")}}}
	earlier.PutRecord("sent", "kept", []byte("old"))
	earlier.PutRecord("sent", "replaced", []byte("old"))
	earlier.PutRecord("sent", "deleted-later", []byte("old"))
	earlier.DeleteRecord("groups", "gone")
	earlier.DeleteRecord("groups", "put-later")
	later := &notifier.Commit{Outbox: map[string][][]byte{"team": {[]byte("2")}}}
	later.PutRecord("sent", "replaced", []byte("new"))
	later.DeleteRecord("sent", "deleted-later")
	later.PutRecord("groups", "put-later", []byte("new"))
	later.Absorb(earlier)

	if got := fmt.Sprintf("%s %s", later.Outbox["team"], later.Outbox["ops"]); got != "[1 2] [a]" {
		t.Errorf("outboxes %s, want [1 2] [a]: the earlier notifications first", got)
	}
	for key, want := range map[string]string{"kept": "old", "replaced": "new"} {
		if got := string(later.Put["sent"][key]); got != want {
			t.Errorf("sent/%s = %q, want %q", key, got, want)
		}
	}
	if _, put := later.Put["sent"]["deleted-later"]; put || !slices.Contains(later.Delete["sent"], "deleted-later") {
		t.Errorf("sent/deleted-later: put %v, deletes %v; want it deleted", put, later.Delete["sent"])
	}
	if string(later.Put["groups"]["put-later"]) != "new" || slices.Contains(later.Delete["groups"], "put-later") {
		t.Errorf("groups/put-later: want the later put to win, got puts %v deletes %v", later.Put["groups"], later.Delete["groups"])
	}
	if !slices.Contains(later.Delete["groups"], "gone") {
		t.Errorf("groups/gone: deletes %v, want the earlier delete kept", later.Delete["groups"])
	}
}

// TestDispatchClockWentBack: an alert restored with a firing time later
// than the resolve (the clock was set back across a restart) resolves at
// its start, never before it, and the log says so.
func TestDispatchClockWentBack(t *testing.T) {
	var logs strings.Builder
	d := notifier.NewDispatcher(newTestRoute(t, notifier.RouteConfig{Receiver: "team"}), muteNothing{},
		slog.New(slog.NewTextHandler(&logs, nil)))
	hot := newRule("GPUHot", rules.SeverityCritical, nil)
	fired := t0.Add(time.Hour)
	d.Dispatch(fired, []rules.Transition{fires(hot, 0, fired)})
	c := d.Dispatch(t0, []rules.Transition{resolves(hot, 0, fired, t0)}) // the clock is an hour behind
	raw := c.Outbox["team"]                                              // the firing, held for its group_wait, then the resolve
	if len(raw) != 2 {
		t.Fatalf("got %d notifications, want the firing and the resolve", len(raw))
	}
	var n notifier.Notification
	if err := json.Unmarshal(raw[1], &n); err != nil {
		t.Fatal(err)
	}
	if a := n.Alerts[0]; a.EndsAt.Before(a.StartsAt) || a.At.Before(a.StartsAt) {
		t.Errorf("resolve: got starts_at %v ends_at %v at %v, want it to end no earlier than it starts", a.StartsAt, a.EndsAt, a.At)
	}
	if !strings.Contains(logs.String(), "the clock went back") {
		t.Errorf("log %q does not say the clock went back", logs.String())
	}
}
