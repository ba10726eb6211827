package rules

import (
	"testing"

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
	if got := len(exampleRules(t)); got != 8 {
		t.Errorf("config.example.yaml has %d rules, want the 8 documented defaults", got)
	}
}
