package rules

import (
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

const condGiB = 1 << 30

// condDevice is an H100-like GPU at 75% memory, idle, hot, two processes.
func condDevice() *gpu.Device {
	return &gpu.Device{
		Index: 0, UUID: "GPU-test", Name: "NVIDIA H100 80GB HBM3",
		MemUsed: 60 * condGiB, MemTotal: 80 * condGiB,
		UtilGPU: 2, UtilMem: 1, TempC: 86, PowerW: 312, PowerLimitW: 400,
		Processes: []gpu.Process{
			{PID: 10, User: "ana", MemUsed: 20 * condGiB},
			{PID: 11, User: "bo", MemUsed: 40 * condGiB},
		},
	}
}

func TestMetricValue(t *testing.T) {
	unknownMem := condDevice()
	unknownMem.MemTotal, unknownMem.MemUsed = 0, 0
	noLimit := condDevice()
	noLimit.PowerLimitW = 0
	nanLimit := condDevice()
	nanLimit.PowerLimitW = math.NaN()
	idle := condDevice()
	idle.Processes = nil
	overfull := condDevice()
	overfull.MemUsed = 90 * condGiB
	nan := math.NaN()
	tests := []struct {
		name string
		d    *gpu.Device
		m    Metric
		want float64
	}{
		{"memory.used", condDevice(), MetricMemoryUsed, 60 * condGiB},
		{"memory.free", condDevice(), MetricMemoryFree, 20 * condGiB},
		{"memory.total", condDevice(), MetricMemoryTotal, 80 * condGiB},
		{"memory.used_percent", condDevice(), MetricMemoryUsedPercent, 75},
		{"utilization.gpu", condDevice(), MetricUtilizationGPU, 2},
		{"utilization.memory", condDevice(), MetricUtilizationMemory, 1},
		{"temperature", condDevice(), MetricTemperature, 86},
		{"power", condDevice(), MetricPower, 312},
		{"power.percent", condDevice(), MetricPowerPercent, 78},
		{"process.memory is the largest", condDevice(), MetricProcessMemory, 40 * condGiB},
		{"process.count", condDevice(), MetricProcessCount, 2},
		{"xid comes from events", condDevice(), MetricXID, nan},
		{"memory.used unknown", unknownMem, MetricMemoryUsed, nan},
		{"memory.free unknown", unknownMem, MetricMemoryFree, nan},
		{"memory.total unknown", unknownMem, MetricMemoryTotal, nan},
		{"memory.used_percent unknown", unknownMem, MetricMemoryUsedPercent, nan},
		{"memory.free never negative", overfull, MetricMemoryFree, 0},
		{"power.percent without limit", noLimit, MetricPowerPercent, nan},
		{"power.percent with NaN limit", nanLimit, MetricPowerPercent, nan},
		{"process.memory without processes", idle, MetricProcessMemory, 0},
		{"process.count without processes", idle, MetricProcessCount, 0},
		{"nil device", nil, MetricTemperature, nan},
		{"invalid metric", condDevice(), Metric(0), nan},
	}
	for _, tt := range tests {
		got := tt.m.Value(tt.d)
		if !sameFloat(got, tt.want, 0) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMetricNamesAndDimensions(t *testing.T) {
	want := []struct {
		name string
		dim  Dimension
	}{
		{"memory.used", Dimension{Base: Bytes}},
		{"memory.free", Dimension{Base: Bytes}},
		{"memory.total", Dimension{Base: Bytes}},
		{"memory.used_percent", Dimension{Base: Percent}},
		{"memory.held", Dimension{Base: Bytes}},
		{"utilization.gpu", Dimension{Base: Percent}},
		{"utilization.memory", Dimension{Base: Percent}},
		{"temperature", Dimension{Base: Celsius}},
		{"power", Dimension{Base: Watts}},
		{"power.percent", Dimension{Base: Percent}},
		{"process.memory", Dimension{Base: Bytes}},
		{"process.count", Dimension{Base: Count}},
		{"process.jobs", Dimension{Base: Count}},
		{"oom_exits", Dimension{Base: Count}},
		{"xid", Dimension{Base: Count}},
		{"held_for", Dimension{Base: Seconds}},
		{"missing_for", Dimension{Base: Seconds}},
		{"xid.fault", Dimension{Base: Count}},
		{"xid.action", Dimension{Base: Count}},
		{"ecc.corrected.volatile", Dimension{Base: Count}},
		{"ecc.uncorrected.volatile", Dimension{Base: Count}},
		{"ecc.corrected.aggregate", Dimension{Base: Count}},
		{"ecc.uncorrected.aggregate", Dimension{Base: Count}},
		{"retired_pages.sbe", Dimension{Base: Count}},
		{"retired_pages.dbe", Dimension{Base: Count}},
		{"retired_pages.pending", Dimension{Base: Count}},
		{"row_remap.correctable", Dimension{Base: Count}},
		{"row_remap.uncorrectable", Dimension{Base: Count}},
		{"row_remap.pending", Dimension{Base: Count}},
		{"row_remap.failed", Dimension{Base: Count}},
		{"recovery_action", Dimension{Base: Count}},
		{"throttle.hw_slowdown", Dimension{Base: Count}},
		{"throttle.hw_thermal", Dimension{Base: Count}},
		{"throttle.hw_power_brake", Dimension{Base: Count}},
		{"throttle.sw_thermal", Dimension{Base: Count}},
		{"throttle.sw_power_cap", Dimension{Base: Count}},
		{"pcie.link.gen", Dimension{Base: Count}},
		{"pcie.link.gen_max", Dimension{Base: Count}},
		{"pcie.link.gen_below_max", Dimension{Base: Count}},
		{"pcie.link.width", Dimension{Base: Count}},
		{"pcie.link.width_max", Dimension{Base: Count}},
		{"pcie.link.width_below_max", Dimension{Base: Count}},
		{"pcie.replays", Dimension{Base: Count}},
		{"nvlink.crc_errors", Dimension{Base: Count}},
		{"nvlink.replay_errors", Dimension{Base: Count}},
		{"nvlink.recovery_errors", Dimension{Base: Count}},
		{"nvlink.links", Dimension{Base: Count}},
		{"nvlink.links_down", Dimension{Base: Count}},
		{"fan.speed", Dimension{Base: Percent}},
		{"clocks.sm", Dimension{Base: Hertz}},
		{"clocks.sm_max", Dimension{Base: Hertz}},
		{"clocks.memory", Dimension{Base: Hertz}},
		{"clocks.memory_max", Dimension{Base: Hertz}},
	}
	ms := Metrics()
	if len(ms) != len(want) {
		t.Fatalf("got %d metrics, want %d", len(ms), len(want))
	}
	for i, m := range ms {
		if m.String() != want[i].name {
			t.Errorf("metric %d: got name %q, want %q", i, m, want[i].name)
		}
		if m.Dimension() != want[i].dim {
			t.Errorf("%s: got dimension %v, want %v", m, m.Dimension(), want[i].dim)
		}
		if got, ok := lookupMetric(m.String()); !ok || got != m {
			t.Errorf("lookupMetric(%q): got %v, %v, want %v, true", m, got, ok, m)
		}
	}
	if got := Metric(0).String(); got != "unknown" {
		t.Errorf("Metric(0).String(): got %q, want %q", got, "unknown")
	}
}

// TestMemoryCountsWhatCanBeAllocated: with memory the driver reserves,
// memory.used_percent and memory.free count what jobs can allocate, and
// time_to_full's full is that; memory.total stays the whole.
func TestMemoryCountsWhatCanBeAllocated(t *testing.T) {
	d := &gpu.Device{MemUsed: 40 << 30, MemTotal: 81559 << 20, MemReserved: 598 << 20}
	allocatable := float64((81559 - 598) << 20)
	for _, tc := range []struct {
		m    Metric
		want float64
	}{
		{MetricMemoryUsedPercent, float64(40<<30) / allocatable * 100},
		{MetricMemoryFree, allocatable - float64(40<<30)},
		{MetricMemoryTotal, float64(81559 << 20)},
	} {
		if got := tc.m.Value(d); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s = %v, want %v", tc.m, got, tc.want)
		}
	}
	full := &gpu.Device{MemUsed: (81559 - 598) << 20, MemTotal: 81559 << 20, MemReserved: 598 << 20}
	if got := MetricMemoryUsedPercent.Value(full); got != 100 {
		t.Errorf("memory.used_percent of a GPU with all it can allocate in use = %v, want 100", got)
	}
	if got := MetricMemoryFree.Value(full); got != 0 {
		t.Errorf("memory.free of a full GPU = %v, want 0", got)
	}
	tr := NewTrend(10 * time.Minute)
	for i := range 21 {
		tr.Add(condEnd.Add(time.Duration(i-20)*30*time.Second), float64(30<<30)+float64(i)*(1<<30)) // 2 GiB/min to 50 GiB
	}
	c := mustParseCond(t, "time_to_full(memory.used, 10m) < 1h")
	d.MemUsed = 50 << 30
	if got, want := c.Value(&EvalContext{Device: d, Trends: []*Trend{tr}}), (allocatable-float64(50<<30))/float64(2<<30)*60; math.Abs(got-want) > 1 {
		t.Errorf("time to full with reserved memory = %v s, want %v (to total less reserved)", got, want)
	}
}
