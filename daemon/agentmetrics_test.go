package daemon_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
)

// labelsOf are a series' labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// labelNames are the label names of every series of a family, each series'
// names sorted and joined by commas.
func labelNames(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		sort.Strings(names)
		out = append(out, strings.Join(names, ","))
	}
	return out
}

// checkLabelNames fails unless every series of family name has exactly
// the labels want (sorted, joined by commas).
func checkLabelNames(t *testing.T, families map[string]*dto.MetricFamily, name, want string) {
	t.Helper()
	f, ok := families[name]
	if !ok {
		t.Errorf("%s: got no family, want one", name)
		return
	}
	for _, got := range labelNames(f) {
		if got != want {
			t.Errorf("%s: got labels %s, want %s", name, got, want)
		}
	}
}

// TestMetricsGPUsAcrossSnapshots: gpu_info and gpu_lost follow a GPU that
// NVML loses and finds again; energy integrates power over the samples'
// times without bridging a long gap; XID errors count by code.
func TestMetricsGPUsAcrossSnapshots(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), nil)
	uuid := func(i int) string { return gpuLabels(i)["uuid"] }
	at := func(s time.Duration) time.Time { return base.Add(s * time.Second) }

	// Three GPUs at 500 W for 20 s, GPU 2 from 400 to 600 W.
	for i, powers := range [][]float64{{500, 500, 400}, {500, 500, 500}, {500, 500, 600}} {
		s := snapshot(at(time.Duration(10*i)), 50, 50, 50)
		for j, p := range powers {
			s.Devices[j].PowerW = p
		}
		r.D.Step(s)
	}
	// GPU 1 is lost; GPU 0 reports two XID 79 and one XID 48.
	s := snapshot(at(30), 50, 50, 50)
	s.Devices = []gpu.Device{s.Devices[0], s.Devices[2]}
	s.Events = []gpu.Event{
		{Time: at(29), Kind: gpu.EventXID, GPU: 0, UUID: uuid(0), XID: 79},
		{Time: at(29), Kind: gpu.EventXID, GPU: 0, UUID: uuid(0), XID: 79},
		{Time: at(29), Kind: gpu.EventXID, GPU: 0, UUID: uuid(0), XID: 48},
		{Time: at(29), Kind: gpu.EventGPULost, GPU: 1, UUID: uuid(1)},
	}
	r.D.Step(s)
	families := scrape(t, r)
	xid := func(i int, code string) map[string]string {
		l := gpuLabels(i)
		l["xid"] = code
		return l
	}
	checkSamples(t, families, []wantSample{
		{"gpuwatch_gpu_info", gpuLabels(0), 1},
		{"gpuwatch_gpu_info", gpuLabels(1), 1},
		{"gpuwatch_gpu_info", gpuLabels(2), 1},
		{"gpuwatch_gpu_lost", gpuLabels(0), 0},
		{"gpuwatch_gpu_lost", gpuLabels(1), 1},
		{"gpuwatch_gpu_lost", gpuLabels(2), 0},
		{"gpuwatch_gpu_energy_joules_total", gpuLabels(0), 500 * 30},
		{"gpuwatch_gpu_energy_joules_total", gpuLabels(1), 500 * 20}, // lost at 30 s: no more energy
		{"gpuwatch_gpu_energy_joules_total", gpuLabels(2), 450*10 + 550*10 + 550*10},
		{"gpuwatch_gpu_xid_errors_total", xid(0, "79"), 2},
		{"gpuwatch_gpu_xid_errors_total", xid(0, "48"), 1},
	})
	if got := len(families["gpuwatch_gpu_xid_errors_total"].GetMetric()); got != 2 {
		t.Errorf("xid series: got %d, want 2 (GPU 0's two codes)", got)
	}
	if got := len(families["gpuwatch_gpu_temperature_celsius"].GetMetric()); got != 2 {
		t.Errorf("temperature series: got %d, want 2 (the lost GPU has no reading)", got)
	}
	for _, name := range []string{"gpuwatch_gpu_info", "gpuwatch_gpu_lost", "gpuwatch_gpu_energy_joules_total"} {
		checkLabelNames(t, families, name, "gpu,host,name,uuid")
		if got := families[name].GetMetric(); len(got) != 3 {
			t.Errorf("%s: got %d series, want 3 (every GPU known, lost too)", name, len(got))
		}
	}
	checkLabelNames(t, families, "gpuwatch_gpu_xid_errors_total", "gpu,host,name,uuid,xid")
	if typ := families["gpuwatch_gpu_energy_joules_total"].GetType(); typ != dto.MetricType_COUNTER {
		t.Errorf("energy: got type %s, want counter", typ)
	}

	// gpuwatch down for ten minutes: the gap adds no energy; the next
	// sample 10 s later does. GPU 1 is back.
	r.D.Step(snapshot(at(630), 50, 50, 50))
	r.D.Step(snapshot(at(640), 50, 50, 50))
	checkSamples(t, scrape(t, r), []wantSample{
		{"gpuwatch_gpu_lost", gpuLabels(1), 0},
		{"gpuwatch_gpu_energy_joules_total", gpuLabels(0), 500*30 + 500*10},
		{"gpuwatch_gpu_energy_joules_total", gpuLabels(1), 500*20 + 500*10},
		{"gpuwatch_gpu_xid_errors_total", xid(0, "79"), 2},
	})
}

// manyUsers is node1's GPU 0 at 80 % utilization shared by 15 users, user
// i holding i+1 GiB in one process, plus a process of no known user.
func manyUsers(at time.Time) *gpu.Snapshot {
	s := snapshot(at, 50)
	d := &s.Devices[0]
	d.UtilGPU, d.Processes = 80, nil
	for i := range 15 {
		d.Processes = append(d.Processes, gpu.Process{PID: 100 + i, User: fmt.Sprintf("user%02d", i),
			Command: "python train.py --run " + strings.Repeat("x", 100), Container: "docker:abc", MemUsed: uint64(i+1) << 30})
	}
	d.Processes = append(d.Processes, gpu.Process{PID: 99, MemUsed: 1 << 29})
	return s
}

// TestMetricsPerUserBounded: a GPU shared by 16 users has 10 user series
// and "other"; memory and utilization add up to the GPU's.
func TestMetricsPerUserBounded(t *testing.T) {
	r := start(t, webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "1ns"), nil)
	r.D.Step(manyUsers(base))
	families := scrape(t, r)
	const gib = 1 << 30
	user := func(name string) map[string]string {
		return map[string]string{"gpu": "0", "uuid": gpuLabels(0)["uuid"], "host": "node1", "user": name}
	}
	var total float64 = 120*gib + gib/2 // 1+2+…+15 GiB and the unknown process
	want := []wantSample{
		{"gpuwatch_gpu_user_memory_bytes", user("user14"), 15 * gib},
		{"gpuwatch_gpu_user_memory_bytes", user("user05"), 6 * gib},
		{"gpuwatch_gpu_user_memory_bytes", user(metrics.OtherUsers), (1+2+3+4+5)*gib + gib/2},
		{"gpuwatch_gpu_user_utilization_ratio", user("user14"), 0.8 * 15 * gib / total},
		{"gpuwatch_gpu_user_utilization_ratio", user(metrics.OtherUsers), 0.8 * (15*gib + gib/2) / total},
	}
	checkSamples(t, families, want)
	for _, name := range []string{"gpuwatch_gpu_user_memory_bytes", "gpuwatch_gpu_user_utilization_ratio"} {
		checkLabelNames(t, families, name, "gpu,host,user,uuid")
		f := families[name]
		if got := len(f.GetMetric()); got != metrics.MaxUsersPerGPU+1 {
			t.Errorf("%s: got %d series, want %d (the largest users and other)", name, got, metrics.MaxUsersPerGPU+1)
		}
		sum := 0.0
		for _, m := range f.GetMetric() {
			sum += m.GetGauge().GetValue()
			if u := labelsOf(m)["user"]; u == "user04" || u == "unknown" {
				t.Errorf("%s: got a series of %s, want it in other", name, u)
			}
		}
		if wantSum := map[string]float64{"gpuwatch_gpu_user_memory_bytes": total, "gpuwatch_gpu_user_utilization_ratio": 0.8}[name]; sum < wantSum*(1-1e-9) || sum > wantSum*(1+1e-9) {
			t.Errorf("%s: the users add up to %v, want the GPU's %v", name, sum, wantSum)
		}
	}
	if _, ok := families["gpuwatch_gpu_process_memory_bytes"]; ok {
		t.Errorf("gpuwatch_gpu_process_memory_bytes: got series without metrics.per_process, want none")
	}
}

// TestMetricsPerProcessOptIn: metrics.per_process adds a series per
// process, its command clipped; a reload turns it off.
func TestMetricsPerProcessOptIn(t *testing.T) {
	dir := t.TempDir()
	text := `
source:
  type: sim
metrics:
  per_process: true
receivers:
  - name: hook
    webhook: {url: "http://127.0.0.1:1/hook"}
route:
  receiver: hook
` + hotRule
	r := start(t, parseConfig(t, dir, text, nil), nil)
	r.D.Step(manyUsers(base))
	families := scrape(t, r)
	f, ok := families["gpuwatch_gpu_process_memory_bytes"]
	if !ok {
		t.Fatal("gpuwatch_gpu_process_memory_bytes: got no family with metrics.per_process: true")
	}
	if got := len(f.GetMetric()); got != 16 {
		t.Errorf("process series: got %d, want 16 (one per process)", got)
	}
	checkLabelNames(t, families, "gpuwatch_gpu_process_memory_bytes", "command,container,gpu,host,pid,user,uuid")
	command := ("python train.py --run " + strings.Repeat("x", 100))[:metrics.MaxCommandLabel]
	checkSamples(t, families, []wantSample{
		{"gpuwatch_gpu_process_memory_bytes", map[string]string{"gpu": "0", "host": "node1", "pid": "114", "user": "user14",
			"command": command, "container": "docker:abc"}, 15 << 30},
		{"gpuwatch_gpu_process_memory_bytes", map[string]string{"pid": "99", "user": "", "command": "", "container": ""}, 1 << 29},
	})

	r.D.Reload(parseConfig(t, dir, strings.Replace(text, "per_process: true", "per_process: false", 1), nil))
	if _, ok := scrape(t, r)["gpuwatch_gpu_process_memory_bytes"]; ok {
		t.Errorf("after a reload with per_process: false: got process series, want none")
	}
}
