package proc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseSlurmJob(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", ""},
		{"v2 host process", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"v2 step", "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", "slurm:4242"},
		{"v2 batch step", "0::/system.slice/slurmstepd.scope/job_17/step_batch/user/task_0\n", "slurm:17"},
		{"v2 slurmstepd itself", "0::/system.slice/slurmstepd.scope/system\n", ""},
		{"v1 step", "12:devices:/slurm/uid_1000/job_4242/step_0/task_0\n11:memory:/slurm/uid_1000/job_4242/step_0/task_0\n1:name=systemd:/user.slice/user-1000.slice\n", "slurm:4242"},
		{"v1 several slurmd a node", "5:freezer:/slurm_node01/uid_1001/job_99/step_extern\n", "slurm:99"},
		{"v1 uid level only", "4:memory:/slurm/uid_1000\n", ""},
		{"job dir outside slurm", "0::/system.slice/job_4242.service\n", ""},
		{"job dir with a name", "0::/system.slice/slurmstepd.scope/job_abc/step_0\n", ""},
		{"not a cgroup file", "job_4242\n", ""},
	} {
		if got := ParseSlurmJob(tc.text); got != tc.want {
			t.Errorf("%s: ParseSlurmJob = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestParseSlurmJobFiles reads cgroup files copied from Slurm nodes: a
// cgroup v1 node (slurmd's proctrack/cgroup with task/cgroup) and a
// cgroup v2 node (Slurm 22.05 and later), batch and srun steps.
func TestParseSlurmJobFiles(t *testing.T) {
	for file, want := range map[string]string{
		"slurm-v1-step0.cgroup":  "slurm:4242",
		"slurm-v1-batch.cgroup":  "slurm:4243",
		"slurm-v2-step0.cgroup":  "slurm:88126",
		"slurm-v2-extern.cgroup": "slurm:88127",
	} {
		text, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := ParseSlurmJob(string(text)); got != want {
			t.Errorf("%s: ParseSlurmJob = %q, want %q", file, got, want)
		}
		if got := ParseCgroup(string(text)); got != "" {
			t.Errorf("%s: ParseCgroup = %q, want no container", file, got)
		}
	}
}

func TestParseSlurmAccount(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", ""},
		{"no slurm", "HOME=/root\x00PATH=/bin\x00", ""},
		{"account", "SLURM_JOB_ID=1\x00SLURM_JOB_ACCOUNT=physics\x00", "physics"},
		{"last without NUL", "SLURM_JOB_ACCOUNT=bio_lab-2", "bio_lab-2"},
		{"empty account", "SLURM_JOB_ACCOUNT=\x00", ""},
		{"not a name", "SLURM_JOB_ACCOUNT=a;rm -rf\x00", ""},
		{"a prefix of another variable", "XSLURM_JOB_ACCOUNT=x\x00", ""},
	} {
		if got := ParseSlurmAccount(tc.text); got != tc.want {
			t.Errorf("%s: ParseSlurmAccount = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestParseSlurmAccountFile reads the environment of a step of a job on a
// Slurm node, as /proc/PID/environ holds it.
func TestParseSlurmAccountFile(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("testdata", "slurm-step0.environ"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ParseSlurmAccount(string(text)); got != "vision-lab" {
		t.Errorf("ParseSlurmAccount = %q, want vision-lab", got)
	}
}
