package rules

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestEngineMissingGPUFollowsItsHost: a hub's engine evaluates the GPUs of
// many hosts, one host's snapshot at a time. A GPU missing from its
// host's snapshot is evaluated as missing there, never at another host's
// snapshot; a GPU whose UUID moves to another host is missing at its new
// host only, and each missing GPU is evaluated once per snapshot.
func TestEngineMissingGPUFollowsItsHost(t *testing.T) {
	rs := mustRules(t, `
rules:
  - alert: Gone
    when: missing_for > 0s
`)
	e := NewEngine(rs, Options{})
	at := func(host string, sec int, devs ...gpu.Device) []Transition {
		return e.Eval(&gpu.Snapshot{Time: t0.Add(time.Duration(sec) * time.Second), Host: host, Devices: devs})
	}
	fired := func(ts []Transition) map[string]int {
		out := map[string]int{}
		for _, tr := range ts {
			if !tr.Resolved() {
				out[tr.Host+"/"+tr.UUID]++
			}
		}
		return out
	}
	a0, a1, b0 := device(0, 10, 50, 40), device(1, 10, 50, 40), device(2, 10, 50, 40)
	at("a", 0, a0, a1)
	at("b", 0, b0)
	if got := fired(at("b", 10)); len(got) != 1 || got["b/"+b0.UUID] != 1 {
		t.Errorf("host b reports without its GPU: fired %v, want only b/%s once", got, b0.UUID)
	}
	if got := fired(at("a", 10, a0, a1)); len(got) != 0 {
		t.Errorf("host a reports all its GPUs: fired %v, want nothing", got)
	}
	// a1 now reports from host b: host a without it does not miss it.
	at("b", 20, b0, a1)
	if got := fired(at("a", 30, a0)); len(got) != 0 {
		t.Errorf("a GPU that moved to host b was judged missing at host a: fired %v", got)
	}
	if got := fired(at("b", 30, b0)); len(got) != 1 || got["b/"+a1.UUID] != 1 {
		t.Errorf("host b reports without the GPU that moved to it: fired %v, want only b/%s once", got, a1.UUID)
	}
	// A reload keeps which host each GPU reports from.
	reloaded := NewEngine(rs, Options{})
	reloaded.Inherit(e)
	e = reloaded
	if got := fired(at("a", 40)); len(got) != 1 || got["a/"+a0.UUID] != 1 {
		t.Errorf("after a reload, host a reports without its GPU: fired %v, want only a/%s once", got, a0.UUID)
	}
}
