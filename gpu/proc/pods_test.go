package proc

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/kube"
	"github.com/gpuwatch/gpuwatch/gpu/kube/kubetest"
)

func TestParsePodLogDir(t *testing.T) {
	tests := []struct {
		dir          string
		ns, pod, uid string
		ok           bool
	}{
		{"ml-team_train-llama-0_" + podDsh, "ml-team", "train-llama-0", podDsh, true},
		{"kube-system_nvidia-device-plugin-daemonset-x7k2p_0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "kube-system", "nvidia-device-plugin-daemonset-x7k2p", "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", true},
		// A static pod's UID is the hash of its manifest: 32 hex digits.
		{"kube-system_etcd-node-1_6d9c2c3a0b4e5f60718293a4b5c6d7e8", "kube-system", "etcd-node-1", "6d9c2c3a0b4e5f60718293a4b5c6d7e8", true},
		{"default_web.v2_" + "5E3C2A1B-7D4F-4A8E-9B0C-1D2E3F4A5B6C", "default", "web.v2", podDsh, true},
		{"default_web_not-a-uid", "", "", "", false},
		{"default_web_" + podDsh + "_extra", "", "", "", false},
		{"default_" + podDsh, "", "", "", false},
		{"Default_web_" + podDsh, "", "", "", false},
		{"-default_web_" + podDsh, "", "", "", false},
		{"default_web-_" + podDsh, "", "", "", false},
		{"default__" + podDsh, "", "", "", false},
		{"", "", "", "", false},
	}
	for _, tt := range tests {
		ns, pod, uid, ok := ParsePodLogDir(tt.dir)
		if ns != tt.ns || pod != tt.pod || uid != tt.uid || ok != tt.ok {
			t.Errorf("ParsePodLogDir(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.dir, ns, pod, uid, ok, tt.ns, tt.pod, tt.uid, tt.ok)
		}
	}
}

// writePodLogs makes a kubelet pod log folder with a folder per name.
func writePodLogs(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n, "trainer"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPodNames(t *testing.T) {
	const other = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
	dir := writePodLogs(t, "ml-team_train-llama-0_"+podDsh)
	// A file with a pod folder's name is not a pod's folder.
	if err := os.WriteFile(filepath.Join(dir, "default_ghost_"+other), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pods := NewPodNames(dir)
	if got, ok := pods.Name(podDsh); got != "ml-team/train-llama-0" || !ok {
		t.Errorf("Name(%s) = %q, %v; want ml-team/train-llama-0, true", podDsh, got, ok)
	}
	if got, ok := pods.Name(other); ok {
		t.Errorf("Name of a pod with only a file = %q, want not found", got)
	}
	// A pod that starts later is found once the folder changed.
	if err := os.Remove(filepath.Join(dir, "default_ghost_"+other)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "default_web-1_"+other), 0o755); err != nil {
		t.Fatal(err)
	}
	// The folder's time moves on with the change; make sure it differs on
	// file systems with coarse times.
	if err := os.Chtimes(dir, time.Time{}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, ok := pods.Name(other); got != "default/web-1" || !ok {
		t.Errorf("Name of a pod started later = %q, %v; want default/web-1, true", got, ok)
	}
	if _, ok := NewPodNames(filepath.Join(dir, "missing")).Name(podDsh); ok {
		t.Errorf("Name from a missing folder: found, want not found")
	}
}

func TestReaderAttributeNamesPods(t *testing.T) {
	r := NewReader(writeFakeProc(t, fakeTree()), writePasswd(t, fakePasswd), nil)
	r.pods = NewPodNames(writePodLogs(t, "ml-team_train-llama-0_"+podDsh))
	p := gpu.Process{PID: 1234}
	r.Attribute(&p)
	if want := "k8s:ml-team/train-llama-0"; p.Container != want {
		t.Errorf("Container of a pod the pod logs name = %q, want %q", p.Container, want)
	}
	// Without the folder the pod stays a UID.
	r.pods = NewPodNames(filepath.Join(t.TempDir(), "none"))
	p = gpu.Process{PID: 1234}
	r.Attribute(&p)
	if want := "k8s:" + podDsh + "/3c8e1a5f0b2d"; p.Container != want {
		t.Errorf("Container of a pod without pod logs = %q, want %q", p.Container, want)
	}
	// A docker container is not a pod.
	p = gpu.Process{PID: 2000}
	r.Attribute(&p)
	if want := "docker:9f8e7d6c5b4a"; p.Container != want {
		t.Errorf("Container of a docker container = %q, want %q", p.Container, want)
	}
}

// settled is a kube.Pods of gpu-node-1 on the fake API server, with its
// first list in.
func settled(t *testing.T, s *kubetest.Server, keys ...string) *kube.Pods {
	t.Helper()
	pods, err := kube.New(s.Options("gpu-node-1", keys...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pods.Close)
	pods.Refresh(t.Context()) // the test's API server may fail it
	return pods
}

func TestReaderAttributeLabelsPodsFromTheAPIServer(t *testing.T) {
	s := kubetest.NewServer(t)
	s.SetPods(kubetest.Pod{Node: "gpu-node-1", Namespace: "ml-team", Name: "train-llama-0", UID: podDsh,
		Labels: map[string]string{"owner": "alice", "app.kubernetes.io/name": "llama", "pod-template-hash": "7d9f8c6b5"}})
	r := NewReader(writeFakeProc(t, fakeTree()), writePasswd(t, fakePasswd), settled(t, s, "app.kubernetes.io/name", "owner"))
	// The log folder is not mounted: the API server names the pod.
	r.pods = NewPodNames(filepath.Join(t.TempDir(), "none"))
	p := gpu.Process{PID: 1234}
	r.Attribute(&p)
	if p.Container != "k8s:ml-team/train-llama-0" || p.PodLabels != "app.kubernetes.io/name=llama,owner=alice" {
		t.Errorf("a pod the API server lists: container %q, labels %q; want k8s:ml-team/train-llama-0, app.kubernetes.io/name=llama,owner=alice",
			p.Container, p.PodLabels)
	}
	// A process outside pods has no pod labels.
	p = gpu.Process{PID: 2000}
	r.Attribute(&p)
	if p.PodLabels != "" {
		t.Errorf("a docker container's process has pod labels %q", p.PodLabels)
	}
}

func TestReaderAttributeNamesPodsWhileTheAPIServerIsDown(t *testing.T) {
	s := kubetest.NewServer(t)
	s.Fail(http.StatusServiceUnavailable, "the API server is restarting")
	r := NewReader(writeFakeProc(t, fakeTree()), writePasswd(t, fakePasswd), settled(t, s, "owner"))
	r.pods = NewPodNames(writePodLogs(t, "ml-team_train-llama-0_"+podDsh))
	p := gpu.Process{PID: 1234}
	r.Attribute(&p)
	if p.Container != "k8s:ml-team/train-llama-0" || p.PodLabels != "" || p.User != "alice" {
		t.Errorf("with the API server down: container %q, labels %q, user %q; want k8s:ml-team/train-llama-0 from the log folder, none, alice",
			p.Container, p.PodLabels, p.User)
	}
}

func BenchmarkPodNamesKnown(b *testing.B) {
	pods := NewPodNames(writePodLogs(b, "ml-team_train-llama-0_"+podDsh))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := pods.Name(podDsh); !ok {
			b.Fatal("not found")
		}
	}
}
