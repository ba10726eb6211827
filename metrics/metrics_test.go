package metrics_test

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
	"github.com/gpuwatch/gpuwatch/notifier"
)

// fakeSource is a metrics.Source holding fixed answers.
type fakeSource struct {
	snap   *gpu.Snapshot
	alerts []metrics.Alert
	depth  map[string]int
	stats  map[string]notifier.DeliveryStats
}

func (f *fakeSource) Snapshots() []*gpu.Snapshot {
	if f.snap == nil {
		return nil
	}
	return []*gpu.Snapshot{f.snap}
}
func (f *fakeSource) Alerts() []metrics.Alert                          { return f.alerts }
func (f *fakeSource) OutboxDepth() map[string]int                      { return f.depth }
func (f *fakeSource) DeliveryStats() map[string]notifier.DeliveryStats { return f.stats }

var at = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// twoGPUs is node1 with an H100 that reports everything and a GPU that
// reports neither memory, power nor memory utilization.
func twoGPUs() *gpu.Snapshot {
	nan := math.NaN()
	return &gpu.Snapshot{Time: at, Host: "node1", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "NVIDIA H100 80GB HBM3", MemUsed: 20 << 30, MemTotal: 80 << 30,
			UtilGPU: 90, UtilMem: 40, TempC: 71, PowerW: 500, PowerLimitW: 700,
			Processes: []gpu.Process{{PID: 1, User: "alice", MemUsed: 20 << 30}}},
		{Index: 1, UUID: "GPU-1", Name: "Tesla K80", UtilGPU: 5, UtilMem: nan, TempC: 40, PowerW: nan, PowerLimitW: nan},
	}}
}

func failed(pairs ...any) map[string]int64 {
	out := map[string]int64{}
	for _, r := range notifier.FailureReasons() {
		out[r.String()] = 0
	}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(string)] = int64(pairs[i+1].(int))
	}
	return out
}

func TestCollectorGPUs(t *testing.T) {
	c := metrics.NewCollector(&fakeSource{snap: twoGPUs()}, metrics.Options{Version: "v1.2.3"})
	const h0 = `gpu="0",host="node1",name="NVIDIA H100 80GB HBM3",uuid="GPU-0"`
	const h1 = `gpu="1",host="node1",name="Tesla K80",uuid="GPU-1"`
	want := fmt.Sprintf(`
# HELP gpuwatch_gpu_memory_used_bytes GPU memory in use, in bytes.
# TYPE gpuwatch_gpu_memory_used_bytes gauge
gpuwatch_gpu_memory_used_bytes{%[1]s} 2.147483648e+10
# HELP gpuwatch_gpu_memory_total_bytes GPU memory in all, in bytes.
# TYPE gpuwatch_gpu_memory_total_bytes gauge
gpuwatch_gpu_memory_total_bytes{%[1]s} 8.589934592e+10
# HELP gpuwatch_gpu_utilization_ratio Share of the last sample period the GPU was busy, from 0 to 1 (nvidia-smi's utilization.gpu / 100).
# TYPE gpuwatch_gpu_utilization_ratio gauge
gpuwatch_gpu_utilization_ratio{%[1]s} 0.9
gpuwatch_gpu_utilization_ratio{%[2]s} 0.05
# HELP gpuwatch_gpu_memory_utilization_ratio Share of the last sample period GPU memory was read or written, from 0 to 1 (nvidia-smi's utilization.memory / 100).
# TYPE gpuwatch_gpu_memory_utilization_ratio gauge
gpuwatch_gpu_memory_utilization_ratio{%[1]s} 0.4
# HELP gpuwatch_gpu_temperature_celsius GPU core temperature, in degrees Celsius.
# TYPE gpuwatch_gpu_temperature_celsius gauge
gpuwatch_gpu_temperature_celsius{%[1]s} 71
gpuwatch_gpu_temperature_celsius{%[2]s} 40
# HELP gpuwatch_gpu_power_watts GPU power draw, in watts.
# TYPE gpuwatch_gpu_power_watts gauge
gpuwatch_gpu_power_watts{%[1]s} 500
# HELP gpuwatch_gpu_power_limit_watts GPU power limit, in watts.
# TYPE gpuwatch_gpu_power_limit_watts gauge
gpuwatch_gpu_power_limit_watts{%[1]s} 700
# HELP gpuwatch_gpu_processes Compute processes on the GPU.
# TYPE gpuwatch_gpu_processes gauge
gpuwatch_gpu_processes{%[1]s} 1
gpuwatch_gpu_processes{%[2]s} 0
# HELP gpuwatch_last_sample_timestamp_seconds Time of the latest sample, in seconds since the Unix epoch (its own time: a replay shows the log's).
# TYPE gpuwatch_last_sample_timestamp_seconds gauge
gpuwatch_last_sample_timestamp_seconds{host="node1"} %[3]d
`, h0, h1, at.Unix())
	names := []string{"gpuwatch_gpu_memory_used_bytes", "gpuwatch_gpu_memory_total_bytes", "gpuwatch_gpu_utilization_ratio",
		"gpuwatch_gpu_memory_utilization_ratio", "gpuwatch_gpu_temperature_celsius", "gpuwatch_gpu_power_watts",
		"gpuwatch_gpu_power_limit_watts", "gpuwatch_gpu_processes", "gpuwatch_last_sample_timestamp_seconds"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestCollectorBeforeFirstSample(t *testing.T) {
	c := metrics.NewCollector(&fakeSource{}, metrics.Options{})
	if n := testutil.CollectAndCount(c, "gpuwatch_gpu_temperature_celsius", "gpuwatch_last_sample_timestamp_seconds"); n != 0 {
		t.Errorf("GPU series before the first sample: got %d, want 0", n)
	}
	want := fmt.Sprintf(`
# HELP gpuwatch_build_info Always 1; the labels say which gpuwatch is running.
# TYPE gpuwatch_build_info gauge
gpuwatch_build_info{goversion=%q,version="unknown"} 1
`, runtime.Version())
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuwatch_build_info"); err != nil {
		t.Error(err)
	}
}

func TestCollectorAlertsAndDeliveries(t *testing.T) {
	src := &fakeSource{
		alerts: []metrics.Alert{
			{Name: "GPUHot", Severity: "critical", State: "firing"},
			{Name: "GPUHot", Severity: "critical", State: "firing"},
			{Name: "GPUHot", Severity: "critical", State: "pending"},
			{Name: "GPUIdleButHeld", Severity: "warning", State: "pending"},
		},
		depth: map[string]int{"ops": 3, "team": 0},
		stats: map[string]notifier.DeliveryStats{
			"ops":  {Sent: 7, Retried: 4, Dead: 1, Failed: failed("http_5xx", 4, "http_4xx", 1)},
			"team": {Sent: 2, Failed: failed()},
		},
	}
	c := metrics.NewCollector(src, metrics.Options{Version: "v1"})
	want := `
# HELP gpuwatch_alerts Pending and firing alerts, by rule, severity and state.
# TYPE gpuwatch_alerts gauge
gpuwatch_alerts{alert="GPUHot",severity="critical",state="firing"} 2
gpuwatch_alerts{alert="GPUHot",severity="critical",state="pending"} 1
gpuwatch_alerts{alert="GPUIdleButHeld",severity="warning",state="pending"} 1
# HELP gpuwatch_outbox_depth Notifications waiting in the receiver's durable outbox.
# TYPE gpuwatch_outbox_depth gauge
gpuwatch_outbox_depth{receiver="ops"} 3
gpuwatch_outbox_depth{receiver="team"} 0
# HELP gpuwatch_notifications_sent_total Notifications the receiver accepted.
# TYPE gpuwatch_notifications_sent_total counter
gpuwatch_notifications_sent_total{receiver="ops"} 7
gpuwatch_notifications_sent_total{receiver="team"} 2
# HELP gpuwatch_notifications_retried_total Failed delivery tries that will be tried again.
# TYPE gpuwatch_notifications_retried_total counter
gpuwatch_notifications_retried_total{receiver="ops"} 4
gpuwatch_notifications_retried_total{receiver="team"} 0
# HELP gpuwatch_notifications_dead_total Notifications the receiver refused for good, kept as dead letters (gpuwatch outbox list).
# TYPE gpuwatch_notifications_dead_total counter
gpuwatch_notifications_dead_total{receiver="ops"} 1
gpuwatch_notifications_dead_total{receiver="team"} 0
`
	names := []string{"gpuwatch_alerts", "gpuwatch_outbox_depth", "gpuwatch_notifications_sent_total",
		"gpuwatch_notifications_retried_total", "gpuwatch_notifications_dead_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	// Every reason is a series for every receiver, zero or not, so rate()
	// works from the first failure on.
	if n := testutil.CollectAndCount(c, "gpuwatch_notifications_failed_total"); n != 2*len(notifier.FailureReasons()) {
		t.Errorf("failed_total series: got %d, want %d", n, 2*len(notifier.FailureReasons()))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "gpuwatch_notifications_failed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["receiver"]+"/"+labels["reason"]] = m.GetCounter().GetValue()
		}
	}
	for key, want := range map[string]float64{"ops/http_5xx": 4, "ops/http_4xx": 1, "ops/timeout": 0, "team/http_5xx": 0} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("failed_total{%s}: got %v (present %v), want %v", key, v, ok, want)
		}
	}
}

func TestCollectorLint(t *testing.T) {
	src := &fakeSource{snap: twoGPUs(), alerts: []metrics.Alert{{Name: "GPUHot", Severity: "critical", State: "firing"}},
		depth: map[string]int{"ops": 1}, stats: map[string]notifier.DeliveryStats{"ops": {Failed: failed()}}}
	problems, err := testutil.CollectAndLint(metrics.NewCollector(src, metrics.Options{Version: "v1"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestNewRegistry(t *testing.T) {
	h := metrics.NewSampleDuration()
	h.Observe(0.002)
	reg := metrics.NewRegistry(&fakeSource{snap: twoGPUs()}, metrics.Options{Version: "v1"}, h)
	for _, name := range []string{metrics.SampleDurationName, "gpuwatch_build_info", "go_goroutines", "gpuwatch_gpu_temperature_celsius"} {
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("%s: got no series, want some", name)
		}
	}
	if got := testutil.CollectAndCount(h); got != 1 {
		t.Errorf("sample duration: got %d series, want 1", got)
	}
}

// BenchmarkCollect16GPUs is one scrape's collection for a 16-GPU host,
// two users on each GPU, with a few alerts and receivers.
func BenchmarkCollect16GPUs(b *testing.B) {
	snap := &gpu.Snapshot{Time: at, Host: "node1"}
	for i := range 16 {
		snap.Devices = append(snap.Devices, gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%02d", i), Name: "NVIDIA H100 80GB HBM3",
			MemUsed: 20 << 30, MemTotal: 80 << 30, UtilGPU: 90, UtilMem: 40, TempC: 70, PowerW: 500, PowerLimitW: 700,
			Processes: []gpu.Process{{PID: 100 + i, User: "alice", Command: "python train.py", MemUsed: 15 << 30},
				{PID: 200 + i, User: "bob", Command: "python eval.py", MemUsed: 5 << 30}}})
	}
	tracker := metrics.NewTracker()
	tracker.Observe(snap)
	src := &fakeSource{snap: snap,
		alerts: []metrics.Alert{{Name: "GPUHot", Severity: "critical", State: "firing"}, {Name: "GPUIdleButHeld", Severity: "warning", State: "pending"}},
		depth:  map[string]int{"ops": 0, "team": 0},
		stats:  map[string]notifier.DeliveryStats{"ops": {Failed: failed()}, "team": {Failed: failed()}}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(src, metrics.Options{Version: "v1", GPUs: tracker}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCollectorHealth: a GPU's health readings are series of their own,
// in their units (the fan as a ratio, clocks in hertz), counters as
// counters; a reading the GPU does not give has no series, not a 0.
func TestCollectorHealth(t *testing.T) {
	snap := twoGPUs()
	h := &snap.Devices[0].Health
	h.Set(gpu.ECCUncorrectedVolatile, 1)
	h.Set(gpu.RowRemapPending, 1)
	h.Set(gpu.FanSpeed, 45)
	h.Set(gpu.SMClock, 1980)
	h.Set(gpu.ClockEventReasons, float64(gpu.ClockEventHWPowerBrake|gpu.ClockEventHWSlowdown))
	c := metrics.NewCollector(&fakeSource{snap: snap}, metrics.Options{})
	const h0 = `gpu="0",host="node1",name="NVIDIA H100 80GB HBM3",uuid="GPU-0"`
	want := fmt.Sprintf(`
# HELP gpuwatch_gpu_ecc_uncorrected_volatile_total Uncorrected (double-bit) ECC errors since the driver loaded.
# TYPE gpuwatch_gpu_ecc_uncorrected_volatile_total counter
gpuwatch_gpu_ecc_uncorrected_volatile_total{%[1]s} 1
# HELP gpuwatch_gpu_row_remap_pending 1 while a row remap waits for a GPU reset to take effect, else 0.
# TYPE gpuwatch_gpu_row_remap_pending gauge
gpuwatch_gpu_row_remap_pending{%[1]s} 1
# HELP gpuwatch_gpu_clock_event_reasons Why the clocks are below their maximum now, as NVML's bitmask: 4 sw_power_cap, 8 hw_slowdown, 32 sw_thermal, 64 hw_thermal, 128 hw_power_brake.
# TYPE gpuwatch_gpu_clock_event_reasons gauge
gpuwatch_gpu_clock_event_reasons{%[1]s} 136
# HELP gpuwatch_gpu_fan_speed_ratio Fan speed, from 0 to 1 of its full speed.
# TYPE gpuwatch_gpu_fan_speed_ratio gauge
gpuwatch_gpu_fan_speed_ratio{%[1]s} 0.45
# HELP gpuwatch_gpu_sm_clock_hertz SM clock now, in hertz.
# TYPE gpuwatch_gpu_sm_clock_hertz gauge
gpuwatch_gpu_sm_clock_hertz{%[1]s} 1.98e+09
`, h0)
	names := []string{"gpuwatch_gpu_ecc_uncorrected_volatile_total", "gpuwatch_gpu_row_remap_pending", "gpuwatch_gpu_clock_event_reasons",
		"gpuwatch_gpu_fan_speed_ratio", "gpuwatch_gpu_sm_clock_hertz", "gpuwatch_gpu_ecc_corrected_volatile_total", "gpuwatch_gpu_nvlink_links_down"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestCollectorMIG(t *testing.T) {
	nan := math.NaN()
	snap := &gpu.Snapshot{Time: at, Host: "node1", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-a", Name: "NVIDIA A100-SXM4-80GB", MIGEnabled: true, UtilGPU: nan, UtilMem: nan, TempC: 50, PowerW: 200, PowerLimitW: 400},
		{Index: 0, UUID: "MIG-b", Name: "NVIDIA A100-SXM4-80GB", MIG: &gpu.MIG{ParentUUID: "GPU-a", GPUInstance: 7, Profile: "1g.10gb"},
			MemUsed: 2 << 30, MemTotal: 10 << 30, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan},
	}}
	c := metrics.NewCollector(&fakeSource{snap: snap}, metrics.Options{})
	want := `
# HELP gpuwatch_gpu_memory_used_bytes GPU memory in use, in bytes.
# TYPE gpuwatch_gpu_memory_used_bytes gauge
gpuwatch_gpu_memory_used_bytes{gpu="0",host="node1",name="NVIDIA A100-SXM4-80GB",uuid="MIG-b"} 2.147483648e+09
# HELP gpuwatch_gpu_mig_enabled Always 1, for every GPU split into MIG instances: its memory and processes are its instances'.
# TYPE gpuwatch_gpu_mig_enabled gauge
gpuwatch_gpu_mig_enabled{gpu="0",host="node1",name="NVIDIA A100-SXM4-80GB",uuid="GPU-a"} 1
# HELP gpuwatch_gpu_mig_info Always 1, for every MIG instance: its GPU (parent_uuid), GPU and compute instance IDs and profile. The instance's other series have its own uuid.
# TYPE gpuwatch_gpu_mig_info gauge
gpuwatch_gpu_mig_info{compute_instance="0",gpu="0",gpu_instance="7",host="node1",parent_uuid="GPU-a",profile="1g.10gb",uuid="MIG-b"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuwatch_gpu_memory_used_bytes", "gpuwatch_gpu_mig_enabled", "gpuwatch_gpu_mig_info"); err != nil {
		t.Error(err)
	}
}
