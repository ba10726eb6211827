package prometheus

import (
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// dcgmPodSeries are the series dcgm-exporter exports of a GPU a pod
// holds, with --kubernetes-enable-pod-labels: the pod's labels as labels
// of their own, named as Prometheus allows.
func dcgmPodSeries(f *fakePrometheus, host, uuid, pod string, podLabels map[string]string) {
	for name, v := range map[string]float64{"DCGM_FI_DEV_FB_USED": 60000, "DCGM_FI_DEV_FB_FREE": 20000, "DCGM_FI_DEV_GPU_UTIL": 3} {
		labels := map[string]string{"__name__": name, "Hostname": host, "gpu": "0", "UUID": uuid, "modelName": "NVIDIA A100-SXM4-80GB",
			"namespace": "ml", "pod": pod, "container": "trainer", "job": "dcgm-exporter", "instance": host + ":9400"}
		for k, v := range podLabels {
			labels[k] = v
		}
		f.add(labels, func(time.Time) (float64, bool) { return v, true })
	}
}

// TestDCGMPodLabels: a hub reads the pod labels it is asked for of
// dcgm-exporter's series, and the pod holding the GPU carries them;
// other labels, and values that are no label values, are left out.
func TestDCGMPodLabels(t *testing.T) {
	f := newFakePrometheus(t)
	dcgmPodSeries(f, "node1", "GPU-1", "train-0", map[string]string{"owner": "alice", "app_kubernetes_io_name": "llama", "pod_template_hash": "7d9f8c6b5"})
	dcgmPodSeries(f, "node2", "GPU-2", "notebook-0", map[string]string{"owner": "bob carol"})
	dcgmPodSeries(f, "node3", "GPU-3", "serve-0", nil)
	src := newSource(t, f, Options{Schema: SchemaDCGM, PodLabelKeys: []string{"app.kubernetes.io/name", "owner"}})
	snaps, err := src.q.SampleFleet(t.Context(), at0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]gpu.PodLabels{"node1": "app.kubernetes.io/name=llama,owner=alice", "node2": "", "node3": ""}
	if len(snaps) != len(want) {
		t.Fatalf("got %s, want node1, node2 and node3", describe(snaps))
	}
	for _, s := range snaps {
		ps := s.Devices[0].Processes
		if len(ps) != 1 || ps[0].PodLabels != want[s.Host] {
			t.Errorf("%s: holders %+v, want one pod with labels %q", s.Host, ps, want[s.Host])
		}
	}

	// Without keys asked for, no pod carries labels.
	src = newSource(t, f, Options{Schema: SchemaDCGM})
	snaps, err = src.q.SampleFleet(t.Context(), at0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if ps := s.Devices[0].Processes; len(ps) != 1 || ps[0].PodLabels != "" {
			t.Errorf("%s without pod label keys: holders %+v, want one pod without labels", s.Host, ps)
		}
	}
}

// TestAgentPodLabels: a hub reads the pod labels of gpuwatch agents'
// per-process series (metrics.pod_labels, as label_KEY): each process
// carries those it is asked for.
func TestAgentPodLabels(t *testing.T) {
	f := newFakePrometheus(t)
	f.addAgentGPU("node1", 0, at0.Add(-time.Hour))
	for _, p := range []map[string]string{
		{"pid": "7", "user": "1000", "container": "k8s:ml/train-0", "label_owner": "alice", "label_app_kubernetes_io_name": "llama"},
		{"pid": "8", "user": "bob", "container": "", "label_owner": "", "label_app_kubernetes_io_name": ""},
	} {
		labels := map[string]string{"__name__": "gpuwatch_gpu_process_memory_bytes", "host": "node1", "gpu": "0", "uuid": "GPU-node1-0",
			"instance": "node1:9477", "job": "gpuwatch", "command": "python"}
		for k, v := range p {
			labels[k] = v
		}
		f.add(labels, func(time.Time) (float64, bool) { return 1 << 30, true })
	}
	src := newSource(t, f, Options{PodLabelKeys: []string{"owner"}})
	snaps, err := src.q.SampleFleet(t.Context(), at0)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || len(snaps[0].Devices) != 1 {
		t.Fatalf("got %s, want node1's GPU", describe(snaps))
	}
	got := map[int]gpu.PodLabels{}
	for _, p := range snaps[0].Devices[0].Processes {
		got[p.PID] = p.PodLabels
	}
	if len(got) != 2 || got[7] != "owner=alice" || got[8] != "" {
		t.Errorf("processes' pod labels %v, want pid 7 owner=alice and pid 8 none", got)
	}
}
