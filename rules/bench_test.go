package rules

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"

	"github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// exampleRules are the rules of config.example.yaml, the defaults users start from.
func exampleRules(tb testing.TB) []*Rule {
	tb.Helper()
	root, err := strictyaml.Parse("config.example.yaml", gpuwatch.ExampleConfig)
	if err != nil {
		tb.Fatal(err)
	}
	rs, errs := ParseList("config.example.yaml", mappingValue(root, "rules"))
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	return rs
}

// BenchmarkEvalDefaultRules64GPUs evaluates the default rules on a 64-GPU
// snapshot in steady state (windows full). Target: ≤ 100 ns per rule×GPU,
// 0 allocations.
func BenchmarkEvalDefaultRules64GPUs(b *testing.B) {
	rs := exampleRules(b)
	e := NewEngine(rs, Options{RepeatInterval: 0})
	s := steadySnapshot(64)
	warm(e, s, 2000) // fills the 30m windows at 5 s
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		advance(s)
		e.Eval(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(64*len(rs)), "ns/rule×GPU")
}

func TestExampleRulesLoad(t *testing.T) {
	if got := len(exampleRules(t)); got != 18 {
		t.Errorf("config.example.yaml has %d rules, want the 18 documented defaults", got)
	}
}

// BenchmarkEvalFleet10000GPUs is one evaluation of a hub's engine over its
// whole fleet: 1,250 hosts of 8 GPUs (10,000 GPUs), each host's snapshot
// evaluated with the default rules at the hub's interval of 30 s, the
// windows full and no alert changing (the steady state). Target: the
// cost of BenchmarkEvalDefaultRules64GPUs per rule×GPU, 0 allocations.
func BenchmarkEvalFleet10000GPUs(b *testing.B) {
	rs := exampleRules(b)
	e := NewEngine(rs, Options{RepeatInterval: 4 * time.Hour})
	hosts := fleetHosts(1250, 8)
	step := func() {
		for _, s := range hosts {
			advanceBy(s, 30*time.Second)
			e.Eval(s)
		}
	}
	for range 100 { // fills the 30m windows at 30 s, and then some
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(10000*len(rs)), "ns/rule×GPU")
}

// fleetHosts are the snapshots of n hosts of per GPUs each, every GPU with
// a UUID of its own.
func fleetHosts(n, per int) []*gpu.Snapshot {
	hosts := make([]*gpu.Snapshot, n)
	for h := range hosts {
		s := steadySnapshot(per)
		s.Host = fmt.Sprintf("gpu-node-%04d", h)
		for i := range s.Devices {
			s.Devices[i].UUID = fmt.Sprintf("GPU-%04d-%d", h, i)
		}
		hosts[h] = s
	}
	return hosts
}

// BenchmarkEvalFleetHost8of10000GPUs evaluates the default rules on one
// host's snapshot of 8 GPUs in a hub's engine, which holds a fleet of
// 1,250 such hosts (10,000 GPUs): a host's evaluation must cost what its
// own GPUs cost, not the fleet's. Target: as BenchmarkEvalDefaultRules64GPUs.
func BenchmarkEvalFleetHost8of10000GPUs(b *testing.B) {
	rs := exampleRules(b)
	e := NewEngine(rs, Options{RepeatInterval: 0})
	hosts := fleetHosts(1250, 8)
	for range 400 { // fills the 30m windows at 5 s
		for _, s := range hosts {
			advance(s)
			e.Warm(s)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	h := 0
	for b.Loop() {
		s := hosts[h%len(hosts)]
		advance(s)
		e.Eval(s)
		h++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(8*len(rs)), "ns/rule×GPU")
}
