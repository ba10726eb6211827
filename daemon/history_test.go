package daemon

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/history"
)

// t0 is a minute boundary the history tests start at.
var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// sample is node1 at time at with one GPU per (memory %, utilization %)
// pair; memory is out of 100 GiB.
func sample(at time.Time, readings ...[2]float64) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: at, Host: "node1"}
	for i, r := range readings {
		s.Devices = append(s.Devices, gpu.Device{
			Index: i, UUID: fmt.Sprintf("GPU-%d", i), MemTotal: 100 << 30,
			MemUsed: uint64(r[0] / 100 * (100 << 30)), UtilGPU: r[1],
		})
	}
	return s
}

// same reports whether two series are equal, NaN equal to NaN.
func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

func TestHistoryMinutes(t *testing.T) {
	nan := math.NaN()
	h := newHistories(historyMinutes * time.Minute)
	h.Record(sample(t0, [2]float64{10, 50}))
	h.Record(sample(t0.Add(30*time.Second), [2]float64{20, 70}))  // the same minute: averaged
	h.Record(sample(t0.Add(60*time.Second), [2]float64{40, nan})) // the next minute; utilization unknown
	h.Record(sample(t0.Add(3*time.Minute+59*time.Second), [2]float64{50, 10}))

	got, ok := h.History("node1", "", 0, 5*time.Minute)
	if !ok {
		t.Fatal("History(0): got false, want GPU 0's history")
	}
	if got.Step != time.Minute || !got.End.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("got step %v end %v, want 1m and %v (the last sample's minute)", got.Step, got.End, t0.Add(3*time.Minute))
	}
	wantMem := []float64{nan, 15, 40, nan, 50}
	wantUtil := []float64{nan, 60, nan, nan, 10}
	if !same(got.MemoryUsed, wantMem) {
		t.Errorf("memory: got %v, want %v", got.MemoryUsed, wantMem)
	}
	if !same(got.Utilization, wantUtil) {
		t.Errorf("utilization: got %v, want %v", got.Utilization, wantUtil)
	}
	if _, ok := h.History("node1", "", 1, time.Hour); ok {
		t.Errorf("History(1): got true for a GPU never seen, want false")
	}
}

func TestHistoryWindow(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	for m := range 3 * historyMinutes / 2 { // a day and a half, one sample a minute
		h.Record(sample(t0.Add(time.Duration(m)*time.Minute), [2]float64{float64(m % 100), 1}))
	}
	tests := []struct {
		window   time.Duration
		wantLen  int
		wantLast float64
	}{
		{time.Minute, 1, float64((3*historyMinutes/2 - 1) % 100)},
		{90 * time.Second, 2, float64((3*historyMinutes/2 - 1) % 100)}, // rounded up to whole minutes
		{time.Hour, 60, float64((3*historyMinutes/2 - 1) % 100)},
		{48 * time.Hour, historyMinutes, float64((3*historyMinutes/2 - 1) % 100)}, // capped at a day
		{0, historyMinutes, float64((3*historyMinutes/2 - 1) % 100)},              // the whole day
	}
	for _, tt := range tests {
		got, _ := h.History("node1", "", 0, tt.window)
		if len(got.MemoryUsed) != tt.wantLen || len(got.Utilization) != tt.wantLen {
			t.Errorf("window %v: got %d/%d points, want %d", tt.window, len(got.MemoryUsed), len(got.Utilization), tt.wantLen)
			continue
		}
		if last := got.MemoryUsed[tt.wantLen-1]; last != tt.wantLast {
			t.Errorf("window %v: got last point %v, want %v", tt.window, last, tt.wantLast)
		}
	}
	// The oldest point of the full day is the minute a day before the
	// last: the ring wrapped and kept exactly a day.
	got, _ := h.History("node1", "", 0, 24*time.Hour)
	first := 3*historyMinutes/2 - historyMinutes
	if want := float64(first % 100); got.MemoryUsed[0] != want {
		t.Errorf("after the wrap: got first point %v, want %v (minute %d)", got.MemoryUsed[0], want, first)
	}
	if for24 := got.End.Sub(t0.Add(time.Duration(first) * time.Minute)); for24 != 24*time.Hour-time.Minute {
		t.Errorf("got the day spanning %v, want 23h59m between first and last points", for24)
	}
}

func TestHistoryWrapForgetsOldMinutes(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	h.Record(sample(t0, [2]float64{10, 10}))
	h.Record(sample(t0.Add(time.Minute), [2]float64{20, 20}))
	// A day later the GPU is sampled again: the slot of t0+1m is reused for
	// t0+1d+1m; t0 is more than a day old and must read as a gap, not 10.
	h.Record(sample(t0.Add(24*time.Hour+time.Minute), [2]float64{30, 30}))
	got, _ := h.History("node1", "", 0, 0)
	if n := len(got.MemoryUsed); n != historyMinutes {
		t.Fatalf("got %d points, want %d", n, historyMinutes)
	}
	for i, v := range got.MemoryUsed[:historyMinutes-1] {
		if !math.IsNaN(v) {
			t.Fatalf("point %d: got %v, want NaN (nothing sampled in the last day before the new sample)", i, v)
		}
	}
	if last := got.MemoryUsed[historyMinutes-1]; last != 30 {
		t.Errorf("last point: got %v, want 30", last)
	}
	// A sample more than a day behind the latest is ignored.
	h.Record(sample(t0, [2]float64{99, 99}))
	if got, _ := h.History("node1", "", 0, 0); !math.IsNaN(got.MemoryUsed[0]) || got.MemoryUsed[historyMinutes-1] != 30 {
		t.Errorf("a sample a day late: got first %v last %v, want NaN and 30", got.MemoryUsed[0], got.MemoryUsed[historyMinutes-1])
	}
}

func TestHistoryDevices(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	s := &gpu.Snapshot{Time: t0, Devices: []gpu.Device{
		{Index: 0, MemUsed: 1, MemTotal: 0, UtilGPU: math.Inf(1)}, // no UUID; memory total unknown
		{Index: 1, UUID: "GPU-b", MemUsed: 25, MemTotal: 100, UtilGPU: 5},
	}}
	h.Record(s)
	// GPU-b moves to index 0 (another GPU fell off the bus, indices shifted).
	h.Record(&gpu.Snapshot{Time: t0.Add(time.Minute), Devices: []gpu.Device{{Index: 0, UUID: "GPU-b", MemUsed: 50, MemTotal: 100, UtilGPU: 6}}})
	tests := []struct {
		index          int
		wantMem, wantU []float64
	}{
		{0, []float64{25, 50}, []float64{5, 6}}, // GPU-b, which now has index 0
		{1, []float64{25, 50}, []float64{5, 6}}, // GPU-b, last seen as 1
	}
	for _, tt := range tests {
		got, ok := h.History("", "", tt.index, 2*time.Minute)
		if !ok || !same(got.MemoryUsed, tt.wantMem) || !same(got.Utilization, tt.wantU) {
			t.Errorf("History(%d): got %v %v %v, want %v %v", tt.index, ok, got.MemoryUsed, got.Utilization, tt.wantMem, tt.wantU)
		}
	}
}

// TestHistoryIndicesSwapped: a host's snapshots list the same GPUs in
// the same order, their indices swapped (the driver renumbered them):
// each index reads the GPU that has it now.
func TestHistoryIndicesSwapped(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	h.Record(&gpu.Snapshot{Time: t0, Host: "n", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-a", MemUsed: 10, MemTotal: 100, UtilGPU: 1},
		{Index: 1, UUID: "GPU-b", MemUsed: 20, MemTotal: 100, UtilGPU: 2},
	}})
	h.Record(&gpu.Snapshot{Time: t0.Add(time.Minute), Host: "n", Devices: []gpu.Device{
		{Index: 1, UUID: "GPU-a", MemUsed: 30, MemTotal: 100, UtilGPU: 3},
		{Index: 0, UUID: "GPU-b", MemUsed: 40, MemTotal: 100, UtilGPU: 4},
	}})
	for index, want := range [][]float64{{20, 40}, {10, 30}} {
		got, ok := h.History("n", "", index, 2*time.Minute)
		if !ok || !same(got.MemoryUsed, want) {
			t.Errorf("History(%d): got %v %v, want %v", index, ok, got.MemoryUsed, want)
		}
	}
}

func TestHistoryNoAllocations(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	s := sample(t0, [2]float64{10, 10}, [2]float64{20, 20})
	h.Record(s)
	allocs := testing.AllocsPerRun(100, func() {
		s.Time = s.Time.Add(5 * time.Second)
		h.Record(s)
	})
	if allocs != 0 {
		t.Errorf("Record of known GPUs: got %v allocations, want 0", allocs)
	}
}

func BenchmarkHistoryRecord16GPUs(b *testing.B) {
	readings := make([][2]float64, 16)
	for i := range readings {
		readings[i] = [2]float64{float64(i), 50}
	}
	h := newHistories(historyMinutes * time.Minute)
	s := sample(t0, readings...)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Time = t0.Add(time.Duration(i) * 5 * time.Second)
		h.Record(s)
	}
}

func BenchmarkHistoryDay(b *testing.B) {
	h := newHistories(historyMinutes * time.Minute)
	for m := range historyMinutes {
		h.Record(sample(t0.Add(time.Duration(m)*time.Minute), [2]float64{50, 50}))
	}
	b.ReportAllocs()
	for b.Loop() {
		h.History("node1", "", 0, 24*time.Hour)
	}
}

// TestHistoryKeepsHostsApart: a hub keeps GPU 0 of every host, and
// GPUs without a UUID of two hosts, apart.
func TestHistoryKeepsHostsApart(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	for i, host := range []string{"a", "b"} {
		s := sample(t0, [2]float64{float64(10 * (i + 1)), 1})
		s.Host = host
		h.Record(s)
		s = &gpu.Snapshot{Time: t0, Host: host, Devices: []gpu.Device{{Index: 1, MemUsed: uint64(i + 1), MemTotal: 100, UtilGPU: 1}}}
		h.Record(s)
	}
	for i, host := range []string{"a", "b"} {
		got, ok := h.History(host, "", 0, time.Minute)
		if want := float64(10 * (i + 1)); !ok || got.MemoryUsed[0] != want {
			t.Errorf("History(%s, 0): %v %v, want %v", host, ok, got.MemoryUsed, want)
		}
		got, ok = h.History(host, "", 1, time.Minute)
		if want := float64(i + 1); !ok || got.MemoryUsed[0] != want {
			t.Errorf("History(%s, 1) (no UUID): %v %v, want %v", host, ok, got.MemoryUsed, want)
		}
	}
	if _, ok := h.History("c", "", 0, time.Minute); ok {
		t.Error("History(c, 0): true for a host never seen")
	}
}

// TestHistoryTemperature: each minute keeps the mean temperature; a
// minute whose readings are all unknown is NaN.
func TestHistoryTemperature(t *testing.T) {
	nan := math.NaN()
	h := newHistories(historyMinutes * time.Minute)
	for _, r := range []struct {
		at   time.Duration
		temp float64
	}{{0, 60}, {30 * time.Second, 70}, {time.Minute, nan}, {2 * time.Minute, 88}} {
		s := sample(t0.Add(r.at), [2]float64{10, 50})
		s.Devices[0].TempC = r.temp
		h.Record(s)
	}
	got, ok := h.History("node1", "", 0, 3*time.Minute)
	if want := []float64{65, nan, 88}; !ok || !same(got.Temperature, want) {
		t.Errorf("temperature: got %v %v, want %v", ok, got.Temperature, want)
	}
}

// TestHistorySpan: a GPU server keeps a day of every GPU; a hub, whose
// fleet's history is in Prometheus, keeps what its alert charts show:
// three times the longest window of its rules, at least an hour.
func TestHistorySpan(t *testing.T) {
	parse := func(source, rule string) *config.Config {
		text := "source:\n" + source + "\nrules:\n  - alert: A\n    when: " + rule + "\n"
		cfg, err := config.Parse("gpuwatch.yaml", []byte(text), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("config.Parse: %v\n%s", err, text)
		}
		return cfg
	}
	hub := "  type: prometheus\n  prometheus: {url: 'http://127.0.0.1:9090'}"
	for _, tt := range []struct {
		source, rule string
		want         time.Duration
	}{
		{"  type: sim", "avg(utilization.gpu, 2h) < 5", 24 * time.Hour},
		{hub, "temperature > 85", time.Hour},
		{hub, "trend(memory.used, 40m) > 10MiB/min", 2 * time.Hour},
		{hub, "avg(utilization.gpu, 12h) < 5", 24 * time.Hour},
	} {
		if got := historySpan(parse(tt.source, tt.rule)); got != tt.want {
			t.Errorf("%s, %s: history of %v, want %v", tt.source, tt.rule, got, tt.want)
		}
	}
}

// TestHistoryKeep: a reload that changes how much is kept keeps the
// minutes that fit, at their times.
func TestHistoryKeep(t *testing.T) {
	h := newHistories(3 * time.Hour)
	for m := range 180 {
		h.Record(sample(t0.Add(time.Duration(m)*time.Minute), [2]float64{float64(m % 100), 1}))
	}
	h.keep(time.Hour)
	got, _ := h.History("node1", "", 0, 0)
	if len(got.MemoryUsed) != 60 || got.MemoryUsed[0] != 120%100 || got.MemoryUsed[59] != 179%100 {
		t.Fatalf("kept an hour: got %d points, from %v to %v; want 60, from 20 to 79",
			len(got.MemoryUsed), got.MemoryUsed[0], got.MemoryUsed[len(got.MemoryUsed)-1])
	}
	h.keep(2 * time.Hour)
	h.Record(sample(t0.Add(180*time.Minute), [2]float64{42, 1}))
	got, _ = h.History("node1", "", 0, 0)
	want := make([]float64, 120)
	for i := range want {
		switch m := 61 + i; {
		case m < 120:
			want[i] = math.NaN() // forgotten when an hour was kept
		case m < 180:
			want[i] = float64(m % 100)
		default:
			want[i] = 42
		}
	}
	if !same(got.MemoryUsed, want) {
		t.Errorf("kept two hours again: got %v, want %v", got.MemoryUsed, want)
	}
}

// TestHistoryOfMIGInstances: each MIG instance keeps a history of its
// own, found by its UUID with its own memory as its charts' ceiling, and
// listed under its GPU.
func TestHistoryOfMIGInstances(t *testing.T) {
	h := newHistories(historyMinutes * time.Minute)
	for m := range 3 {
		s := &gpu.Snapshot{Time: t0.Add(time.Duration(m) * time.Minute), Host: "node1", Devices: []gpu.Device{
			{Index: 0, UUID: "GPU-a", MIGEnabled: true, TempC: 50, UtilGPU: math.NaN()},
			{Index: 0, UUID: "MIG-b", MIG: &gpu.MIG{ParentUUID: "GPU-a", GPUInstance: 9, Profile: "1g.10gb"}, MemTotal: 10 << 30, MemUsed: uint64(m+1) << 30, UtilGPU: math.NaN()},
			{Index: 0, UUID: "MIG-a", MIG: &gpu.MIG{ParentUUID: "GPU-a", GPUInstance: 7, Profile: "1g.10gb"}, MemTotal: 10 << 30, MemUsed: 5 << 30, UtilGPU: math.NaN()},
			{Index: 1, UUID: "GPU-b", MemTotal: 80 << 30, MemUsed: 40 << 30, UtilGPU: 90},
		}}
		h.Record(s)
	}
	got, ok := h.History("node1", "MIG-b", 0, 3*time.Minute)
	if !ok || got.MemTotal != 10<<30 || !same(got.MemoryUsed, []float64{10, 20, 30}) {
		t.Errorf("instance MIG-b: got %v total %d memory %v, want 10 GiB and 10, 20, 30%%", ok, got.MemTotal, got.MemoryUsed)
	}
	if got, ok := h.History("node1", "", 0, 3*time.Minute); !ok || got.MemTotal != 0 || got.Temperature[2] != 50 {
		t.Errorf("GPU 0 by index: got %v total %d temperature %v, want the parent's (no memory, 50 C)", ok, got.MemTotal, got.Temperature)
	}
	var labels []string
	for _, g := range h.GPUs(history.Query{Host: "node1", GPU: history.AllGPUs, From: t0, To: t0.Add(2 * time.Minute)}) {
		labels = append(labels, gpu.Label(g.Index, g.MIG)+" "+g.UUID)
	}
	want := []string{"GPU 0 GPU-a", "GPU 0 · MIG 7 (1g.10gb) MIG-a", "GPU 0 · MIG 9 (1g.10gb) MIG-b", "GPU 1 GPU-b"}
	if !slices.Equal(labels, want) {
		t.Errorf("GPUs: got %q, want %q", labels, want)
	}
}
