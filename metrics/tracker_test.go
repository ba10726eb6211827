package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
)

// TestTrackerEvents: an XID event that names only the GPU's index counts
// for the GPU of that index; one for a GPU never seen makes it known, and
// lost; a reading not later than the previous adds no energy.
func TestTrackerEvents(t *testing.T) {
	tr := metrics.NewTracker()
	s := twoGPUs()
	tr.Observe(s)
	later := twoGPUs()
	later.Time = s.Time.Add(10 * time.Second)
	later.Events = []gpu.Event{
		{Kind: gpu.EventXID, GPU: 0, XID: 13},
		{Kind: gpu.EventXID, GPU: 7, UUID: "GPU-7", XID: 79},
	}
	tr.Observe(later)
	again := twoGPUs() // the same time again: no energy
	again.Time = later.Time
	again.Devices[0].PowerW = 5000
	tr.Observe(again)
	c := metrics.NewCollector(&fakeSource{}, metrics.Options{GPUs: tr})
	const h0 = `gpu="0",host="node1",name="NVIDIA H100 80GB HBM3",uuid="GPU-0"`
	const h7 = `gpu="7",host="node1",name="",uuid="GPU-7"`
	want := `
# HELP gpuwatch_gpu_energy_joules_total Energy the GPU used since gpuwatch started, in joules: its power integrated over the samples' times (gaps of more than a few intervals are not bridged).
# TYPE gpuwatch_gpu_energy_joules_total counter
gpuwatch_gpu_energy_joules_total{` + h0 + `} 5000
gpuwatch_gpu_energy_joules_total{gpu="1",host="node1",name="Tesla K80",uuid="GPU-1"} 0
gpuwatch_gpu_energy_joules_total{` + h7 + `} 0
# HELP gpuwatch_gpu_lost 1 while a GPU gpuwatch knew has stopped reporting (NVML lost it: fell off the bus, stopped answering), else 0.
# TYPE gpuwatch_gpu_lost gauge
gpuwatch_gpu_lost{` + h0 + `} 0
gpuwatch_gpu_lost{gpu="1",host="node1",name="Tesla K80",uuid="GPU-1"} 0
gpuwatch_gpu_lost{` + h7 + `} 1
# HELP gpuwatch_gpu_xid_errors_total XID errors the driver reported for the GPU, by XID code.
# TYPE gpuwatch_gpu_xid_errors_total counter
gpuwatch_gpu_xid_errors_total{` + h0 + `,xid="13"} 1
gpuwatch_gpu_xid_errors_total{` + h7 + `,xid="79"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuwatch_gpu_energy_joules_total", "gpuwatch_gpu_lost", "gpuwatch_gpu_xid_errors_total"); err != nil {
		t.Error(err)
	}
}

// TestUsersNamedLikeOther: a user called "other" shares the line of the
// smaller users rather than making a second series of that name; label
// values that are not UTF-8 are made valid, not a failed scrape.
func TestUsersNamedLikeOther(t *testing.T) {
	s := twoGPUs()
	d := &s.Devices[0]
	d.Processes = []gpu.Process{{PID: 1, User: "other", MemUsed: 3 << 30}, {PID: 2, User: "alice", MemUsed: 1 << 30},
		{PID: 3, User: "bad\xffname", Command: "run \xfe", MemUsed: 1 << 30}}
	on := func() bool { return true }
	c := metrics.NewCollector(&fakeSource{snap: s}, metrics.Options{PerProcess: on})
	const g, u = `gpu="0",host="node1"`, `,uuid="GPU-0"`
	want := `
# HELP gpuwatch_gpu_user_memory_bytes GPU memory held by a user's processes, in bytes; the 10 largest users of each GPU, the rest summed as user="other".
# TYPE gpuwatch_gpu_user_memory_bytes gauge
gpuwatch_gpu_user_memory_bytes{` + g + `,user="alice"` + u + `} 1.073741824e+09
gpuwatch_gpu_user_memory_bytes{` + g + `,user="bad` + "\uFFFD" + `name"` + u + `} 1.073741824e+09
gpuwatch_gpu_user_memory_bytes{` + g + `,user="other"` + u + `} 3.221225472e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gpuwatch_gpu_user_memory_bytes"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "gpuwatch_gpu_process_memory_bytes"); n != 3 {
		t.Errorf("process series: got %d, want 3", n)
	}
}

// TestCollectorLintTracked lints the series a tracker and per-process
// series add.
func TestCollectorLintTracked(t *testing.T) {
	tr := metrics.NewTracker()
	s := twoGPUs()
	s.Events = []gpu.Event{{Kind: gpu.EventXID, GPU: 0, UUID: "GPU-0", XID: 79}}
	tr.Observe(s)
	on := func() bool { return true }
	problems, err := testutil.CollectAndLint(metrics.NewCollector(&fakeSource{snap: s}, metrics.Options{GPUs: tr, PerProcess: on}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
