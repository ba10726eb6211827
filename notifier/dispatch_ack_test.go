package notifier_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/store"
)

// key is the alert key of rule on GPU gpu of node1, as transition makes it.
func key(rule string, gpu int) string {
	tr := transition(newRule(rule, rules.SeverityCritical, nil), gpu, rules.StateFiring, false, t0, t0)
	return notifier.AlertKey(tr.Host, tr.Alert, tr.UUID)
}

func TestAcknowledgeStopsReminders(t *testing.T) {
	cfg := notifier.RouteConfig{
		Receiver: "team", GroupWait: ptr(time.Second), RepeatInterval: ptr(time.Hour),
		Routes: []notifier.RouteConfig{
			{Matchers: []string{`severity="critical"`}, Receiver: "ops", Continue: true},
			{Matchers: []string{`severity="critical"`}, Receiver: "team"},
		},
	}
	d := newDispatcher(t, cfg, nil)
	leak := newRule("GPUMemoryLeak", rules.SeverityCritical, nil)
	dispatchWait(t, d, t0, fires(leak, 0, t0), fires(leak, 1, t0))

	c, err := d.Acknowledge(key("GPUMemoryLeak", 0), "U123", t0.Add(10*time.Minute))
	if err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	raw := c.Put[notifier.BucketAcks][key("GPUMemoryLeak", 0)]
	var ack notifier.Ack
	if err := json.Unmarshal(raw, &ack); err != nil || ack.By != "U123" || !ack.At.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("ack record: got %s (%v), want by U123 at +10m", raw, err)
	}
	if by, ok := d.Acknowledged(key("GPUMemoryLeak", 0)); !ok || by != "U123" {
		t.Errorf("Acknowledged(GPU 0): got %q, %v, want U123, true", by, ok)
	}
	if by, ok := d.Acknowledged(key("GPUMemoryLeak", 1)); ok {
		t.Errorf("Acknowledged(GPU 1): got %q, true, want nobody", by)
	}

	at := t0.Add(time.Hour + time.Second)
	got := dispatchWait(t, d, at, repeats(leak, 0, t0, at), repeats(leak, 1, t0, at))
	if want := []string{"ops GPUMemoryLeak repeat 1", "team GPUMemoryLeak repeat 1"}; !slices.Equal(got, want) {
		t.Errorf("reminders after GPU 0's ack: got %q, want %q (none for the acknowledged GPU 0, for any receiver)", got, want)
	}

	end := t0.Add(3 * time.Hour)
	c = d.Dispatch(end, []rules.Transition{resolves(leak, 0, t0, end)})
	if !slices.Contains(c.Delete[notifier.BucketAcks], key("GPUMemoryLeak", 0)) {
		t.Errorf("resolve: got deletes %v, want the ack of GPU 0 deleted", c.Delete)
	}
	if _, ok := d.Acknowledged(key("GPUMemoryLeak", 0)); ok {
		t.Errorf("after the resolve: GPU 0 is still acknowledged, want the ack cleared")
	}
	got = append(outbox(t, c), outbox(t, d.Dispatch(end.Add(time.Hour), nil))...)
	if want := []string{"ops GPUMemoryLeak resolved 0", "team GPUMemoryLeak resolved 0"}; !slices.Equal(got, want) {
		t.Errorf("an acknowledged alert still announces its resolve: got %q, want %q", got, want)
	}
	if _, err := d.Acknowledge(key("GPUMemoryLeak", 0), "U123", end); err == nil {
		t.Errorf("acknowledging the resolved alert: got no error, want one")
	}
}

func TestAcknowledgeDropsWaitingReminders(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(time.Minute), RepeatInterval: ptr(time.Hour)}, nil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	dispatchWait(t, d, t0, fires(hot, 0, t0), fires(hot, 1, t0))
	at := t0.Add(2 * time.Hour)
	checkOutbox(t, "reminders within group_wait", d.Dispatch(at, []rules.Transition{repeats(hot, 0, t0, at), repeats(hot, 1, t0, at)}))
	if _, err := d.Acknowledge(key("GPUHot", 0), "U1", at); err != nil {
		t.Fatalf("Acknowledge GPU 0: %v", err)
	}
	checkOutbox(t, "group_wait over", d.Dispatch(at.Add(time.Minute), nil), "team GPUHot repeat 1")

	at = t0.Add(4 * time.Hour)
	checkOutbox(t, "a lone reminder within group_wait", d.Dispatch(at, []rules.Transition{repeats(hot, 1, t0, at)}))
	c, err := d.Acknowledge(key("GPUHot", 1), "U2", at)
	if err != nil {
		t.Fatalf("Acknowledge GPU 1: %v", err)
	}
	if !slices.Contains(c.Delete[notifier.BucketGroups], "team/GPUHot/repeat") {
		t.Errorf("got deletes %v, want the emptied reminder group deleted", c.Delete)
	}
	checkOutbox(t, "group_wait over, everything acknowledged", d.Dispatch(at.Add(time.Minute), nil))
}

func TestAcknowledgeNotFiring(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team"}, nil)
	tests := []struct {
		name string
		key  string
	}{
		{"unknown alert", "node1/Nope/GPU-0000"},
		{"empty key", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := d.Acknowledge(tt.key, "U1", t0)
			if err == nil || !strings.Contains(err.Error(), "alert "+tt.key+" is not firing") {
				t.Errorf("got %v, %v, want an error saying alert %q is not firing", c, err, tt.key)
			}
			if _, ok := d.Acknowledged(tt.key); ok {
				t.Errorf("Acknowledged: got true after a refused ack, want false")
			}
		})
	}
}

func TestAcknowledgeSurvivesRestart(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := notifier.RouteConfig{Receiver: "team", GroupWait: ptr(time.Second), RepeatInterval: ptr(time.Hour)}
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	d := newDispatcher(t, cfg, nil)
	commitTo(t, db, d.Dispatch(t0, []rules.Transition{fires(hot, 0, t0)}))
	commitTo(t, db, d.Dispatch(t0.Add(time.Second), nil))

	d = restart(t, db, cfg)
	c, err := d.Acknowledge(key("GPUHot", 0), "U9", t0.Add(time.Minute)) // known to fire from the sent record
	if err != nil {
		t.Fatalf("Acknowledge after a restart: %v", err)
	}
	commitTo(t, db, c)

	d = restart(t, db, cfg)
	acks, err := db.All(notifier.BucketAcks)
	if err != nil {
		t.Fatal(err)
	}
	d.RestoreAcks(acks, keepNone(t))
	if by, ok := d.Acknowledged(key("GPUHot", 0)); !ok || by != "U9" {
		t.Errorf("after a restart: got %q, %v, want U9, true", by, ok)
	}
	at := t0.Add(2 * time.Hour)
	if got := dispatchWait(t, d, at, repeats(hot, 0, t0, at)); len(got) != 0 {
		t.Errorf("reminder after a restart: got %q, want none", got)
	}
	aside := map[string]error{}
	d.RestoreAcks(map[string][]byte{"node1/GPUHot/GPU-0": []byte("{")}, func(bucket, key string, why error) { aside[bucket+" "+key] = why })
	if why := aside["acks node1/GPUHot/GPU-0"]; why == nil || !strings.Contains(why.Error(), "not an acknowledgement") {
		t.Errorf("RestoreAcks of a bad record: set aside %v, want the record, saying why", aside)
	}
}

// TestResolveCarriesAcknowledgement checks that the resolve of an
// acknowledged alert says who acknowledged it, so a receiver that redraws
// the alert's message keeps the acknowledgement.
func TestResolveCarriesAcknowledgement(t *testing.T) {
	d := newDispatcher(t, notifier.RouteConfig{Receiver: "team", GroupWait: ptr(time.Duration(0)), RepeatInterval: ptr(time.Hour)}, nil)
	hot := newRule("GPUHot", rules.SeverityWarning, nil)
	dispatchWait(t, d, t0, fires(hot, 0, t0), fires(hot, 1, t0))
	if _, err := d.Acknowledge(key("GPUHot", 0), "alice (U0ALICE)", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(10 * time.Minute)
	c := d.Dispatch(end, []rules.Transition{resolves(hot, 0, t0, end), resolves(hot, 1, t0, end)})
	var by []string
	for _, raw := range append(c.Outbox["team"], d.Dispatch(end.Add(time.Hour), nil).Outbox["team"]...) {
		var n notifier.Notification
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		for _, a := range n.Alerts {
			by = append(by, a.AcknowledgedBy)
		}
	}
	if want := []string{"alice (U0ALICE)", ""}; !slices.Equal(by, want) {
		t.Errorf("got the resolves acknowledged by %q, want %q (GPU 0 acknowledged, GPU 1 not)", by, want)
	}
}
