package rules

import (
	"reflect"
	"testing"
	"time"
)

func TestCondTree(t *testing.T) {
	c, err := ParseCond("memory.used_percent > 95 and not (trend(memory.used, 40m) <= 10MiB/min or xid in (48, 79))")
	if err != nil {
		t.Fatal(err)
	}
	want := CondNode{Kind: CondAnd, Operands: []CondNode{
		{Kind: CondCompare, Value: CondValue{Metric: MetricMemoryUsedPercent}, Op: ">", Quantity: 95},
		{Kind: CondNot, Operands: []CondNode{{Kind: CondOr, Operands: []CondNode{
			{Kind: CondCompare, Value: CondValue{Metric: MetricMemoryUsed, Fn: "trend", Window: 40 * time.Minute}, Op: "<=", Quantity: 10 << 20 / 60.0},
			{Kind: CondIn, Value: CondValue{Metric: MetricXID}, Set: []float64{48, 79}},
		}}}},
	}}
	if got := c.Tree(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := (CondValue{Metric: MetricMemoryUsed, Fn: "slope"}).Dimension(); got != (Dimension{Base: Bytes, PerSecond: true}) {
		t.Errorf("slope of memory.used measures %v, want bytes per second", got)
	}
}

func TestReadTestFileGivesTheCasesSamples(t *testing.T) {
	f, err := ReadTestFile("../examples/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 18 || len(f.Cases) != 13 {
		t.Fatalf("got %d rules and %d cases, want the example's 18 and 13", len(f.Rules), len(f.Cases))
	}
	lost := f.Cases[9] // "a GPU that stops reporting is reported within two minutes"
	if lost.Interval != time.Minute || lost.Steps != 26 || len(lost.Checks) != 3 || lost.Checks[1].Firing[0] != (TestAlert{Alert: "GPULost", GPU: 1}) {
		t.Fatalf("got %+v", lost)
	}
	if s := lost.Snapshot(12); len(s.Devices) != 1 || s.Time != TestStart.Add(12*time.Minute) {
		t.Errorf("sample 12, when GPU 1 does not report: got %+v", s)
	}
	if s := lost.Snapshot(5); len(s.Devices) != 2 || s.Devices[1].MemUsed != 30<<30 || s.Devices[1].MemTotal != 80<<30 {
		t.Errorf("sample 5: got %+v", s)
	}
}
