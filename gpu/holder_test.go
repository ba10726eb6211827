package gpu_test

import (
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

func TestHolderAndOwner(t *testing.T) {
	for _, tc := range []struct {
		p                  gpu.Process
		holder, owner, who string
	}{
		{gpu.Process{PID: 4242, User: "alice", Command: "python train.py", Container: "k8s:ml/train-0/3f2a9c1b"}, "pid 4242", "alice", "alice"},
		{gpu.Process{PID: 5150, User: "alice", Command: "python train.py", Job: "slurm:4242"}, "job 4242, pid 5150", "alice", "job 4242 (alice)"},
		{gpu.Process{User: "alice", Job: "slurm:4242"}, "job 4242", "alice", "job 4242 (alice)"}, // a job the source names without its processes
		{gpu.Process{PID: 7, Job: "slurm:17"}, "job 17, pid 7", "", "job 17"},
		{gpu.PodProcess("ml", "train-0", "trainer"), "pod ml/train-0, container trainer", "ml/train-0", "ml/train-0"},
		{gpu.PodProcess("ml", "train-0", ""), "pod ml/train-0", "ml/train-0", "ml/train-0"},
		{gpu.Process{User: "bob"}, "", "bob", "bob"},        // a user's share of a GPU
		{gpu.Process{Container: "k8s:0f1e"}, "", "", ""},    // a pod UID the source could not name
		{gpu.Process{Container: "docker:3f2a"}, "", "", ""}, // nothing to name
	} {
		if got := tc.p.Who(); got != tc.who {
			t.Errorf("%+v: Who %q, want %q", tc.p, got, tc.who)
		}
		if got := tc.p.Holder(); got != tc.holder {
			t.Errorf("%+v: Holder %q, want %q", tc.p, got, tc.holder)
		}
		if got := tc.p.Owner(); got != tc.owner {
			t.Errorf("%+v: Owner %q, want %q", tc.p, got, tc.owner)
		}
	}
}

func TestCountJobs(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name string
		ps   []gpu.Process
		want int
	}{
		{"none", nil, 0},
		{"a launcher and its worker", []gpu.Process{
			{PID: 1, User: "alice", Command: "python train.py", MemUsed: 20 * gib},
			{PID: 2, User: "alice", Command: "python train.py", MemUsed: gib},
		}, 1},
		{"three pods time-sliced", []gpu.Process{
			{PID: 1, User: "root", Command: "python serve.py", Container: "k8s:ml/a", MemUsed: 6 * gib},
			{PID: 2, User: "root", Command: "python serve.py", Container: "k8s:ml/b", MemUsed: 6 * gib},
			{PID: 3, User: "root", Command: "python serve.py", Container: "k8s:ml/c", MemUsed: 6 * gib},
		}, 3},
		{"two Slurm jobs of one user", []gpu.Process{
			{PID: 1, User: "alice", Command: "python train.py", Job: "slurm:1", MemUsed: gib},
			{PID: 2, User: "alice", Command: "python train.py", Job: "slurm:2", MemUsed: gib},
		}, 2},
		{"a notebook beside a trainer", []gpu.Process{
			{PID: 1, User: "alice", Command: "python train.py", MemUsed: gib},
			{PID: 2, User: "bob", Command: "jupyter-lab", MemUsed: gib},
		}, 2},
		{"pods without memory (dcgm-exporter)", []gpu.Process{gpu.PodProcess("ml", "a", ""), gpu.PodProcess("ml", "b", "")}, 0},
	} {
		if got := gpu.CountJobs(tc.ps); got != tc.want {
			t.Errorf("%s: CountJobs = %d, want %d", tc.name, got, tc.want)
		}
	}
}
