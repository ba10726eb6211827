package metrics_test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/metrics"
)

// TestProcessSeriesCarryPodLabels: with metrics.pod_labels the
// per-process series carry each key as label_KEY, empty for a process
// whose pod lacks it or that is in no pod; a reload changes the keys
// between scrapes of one registry.
func TestProcessSeriesCarryPodLabels(t *testing.T) {
	s := twoGPUs()
	s.Devices[0].Processes = []gpu.Process{
		{PID: 1, User: "1000", Command: "python train.py", Container: "k8s:ml/train-0", PodLabels: "app.kubernetes.io/name=llama,owner=alice", MemUsed: 1 << 30},
		{PID: 2, User: "bob", Command: "jupyter-lab", MemUsed: 2 << 30},
	}
	s.Devices[1].Processes = nil
	var keys atomic.Pointer[[]string]
	keys.Store(&[]string{"app.kubernetes.io/name", "owner"})
	reg := metrics.NewRegistry(&fakeSource{snap: s}, metrics.Options{PerProcess: func() bool { return true }, PodLabelKeys: func() []string { return *keys.Load() }}, nil)
	help := `# HELP gpuwatch_gpu_process_memory_bytes GPU memory held by one process, in bytes (config metrics.per_process; command clipped to ` + strconv.Itoa(metrics.MaxCommandLabel) + ` characters; the pod labels of metrics.pod_labels as label_KEY).
# TYPE gpuwatch_gpu_process_memory_bytes gauge
`
	const gpu0 = `gpu="0",host="node1"`
	want := help + `gpuwatch_gpu_process_memory_bytes{command="python train.py",container="k8s:ml/train-0",` + gpu0 + `,label_app_kubernetes_io_name="llama",label_owner="alice",pid="1",user="1000",uuid="GPU-0"} 1.073741824e+09
gpuwatch_gpu_process_memory_bytes{command="jupyter-lab",container="",` + gpu0 + `,label_app_kubernetes_io_name="",label_owner="",pid="2",user="bob",uuid="GPU-0"} 2.147483648e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gpuwatch_gpu_process_memory_bytes"); err != nil {
		t.Error(err)
	}

	keys.Store(&[]string{})
	want = help + `gpuwatch_gpu_process_memory_bytes{command="python train.py",container="k8s:ml/train-0",` + gpu0 + `,pid="1",user="1000",uuid="GPU-0"} 1.073741824e+09
gpuwatch_gpu_process_memory_bytes{command="jupyter-lab",container="",` + gpu0 + `,pid="2",user="bob",uuid="GPU-0"} 2.147483648e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gpuwatch_gpu_process_memory_bytes"); err != nil {
		t.Errorf("after a reload without pod labels: %v", err)
	}
}

// BenchmarkCollectProcessesPodLabels gathers the per-process series of 16
// GPUs of 2 processes each, without pod labels and with 2 keys.
func BenchmarkCollectProcessesPodLabels(b *testing.B) {
	snap := &gpu.Snapshot{Time: at, Host: "node1"}
	for i := range 16 {
		snap.Devices = append(snap.Devices, gpu.Device{Index: i, UUID: "GPU-" + strconv.Itoa(i), MemUsed: 20 << 30, MemTotal: 80 << 30,
			Processes: []gpu.Process{
				{PID: 100 + i, User: "1000", Command: "python train.py", Container: "k8s:ml/train-" + strconv.Itoa(i), PodLabels: "owner=alice,team=nlp", MemUsed: 15 << 30},
				{PID: 200 + i, User: "bob", Command: "python eval.py", MemUsed: 5 << 30}}})
	}
	for _, keys := range [][]string{nil, {"owner", "team"}} {
		b.Run(strconv.Itoa(len(keys))+" keys", func(b *testing.B) {
			reg := metrics.NewRegistry(&fakeSource{snap: snap}, metrics.Options{PerProcess: func() bool { return true },
				PodLabelKeys: func() []string { return keys }}, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
