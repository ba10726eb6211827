package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// fakePasswd is the passwd file of the fake host.
const fakePasswd = "root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001:Alice:/home/alice:/bin/bash\n"

// fakeProc is one process directory of a fake proc file system.
type fakeProc struct {
	status, cmdline, cgroup, stat, comm, environ string
}

// writeFakeProc writes the processes under a new proc root and returns the
// root. Empty fields leave their file out, as for a process whose files
// cannot be read.
func writeFakeProc(t testing.TB, procs map[int]fakeProc) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"status": p.status, "cmdline": p.cmdline, "cgroup": p.cgroup, "stat": p.stat, "comm": p.comm, "environ": p.environ}
		for name, text := range files {
			if text == "" && name != "cmdline" {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// writePasswd writes a passwd file and returns its path.
func writePasswd(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeTree is the proc file system of a fake GPU host: a training job in a
// Kubernetes pod, a notebook of a user the passwd file does not know, a
// step of a Slurm job, a kernel thread, and a zombie whose comm file is
// gone.
func fakeTree() map[int]fakeProc {
	return map[int]fakeProc{
		1234: {
			status:  statusFixture,
			cmdline: "python3\x00train.py\x00--batch\x0064\x00",
			cgroup:  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/cri-containerd-" + cid + ".scope\n",
			stat:    "1234 (python3) S 1 1234 1234 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 57 0 8812 0 0\n",
			comm:    "python3\n",
		},
		2000: {
			status:  "Name:\tjupyter\nUid:\t4242\t4242\t4242\t4242\n",
			cmdline: "/opt/conda/bin/python\x00-m\x00jupyter\x00lab\x00",
			cgroup:  "0::/system.slice/docker-" + cid2 + ".scope\n",
			stat:    "2000 (jupyter) S 1 2000 2000 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n",
			comm:    "jupyter\n",
		},
		3: {
			status: "Name:\tkworker/0:1\nUid:\t0\t0\t0\t0\n",
			cgroup: "0::/\n",
			stat:   "3 (kworker/0:1) I 2 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n",
			comm:   "kworker/0:1\n",
		},
		5150: {
			status:  "Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n",
			cmdline: "python\x00train.py\x00",
			cgroup:  "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n",
			stat:    "5150 (python) S 1 5150 5150 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n",
			comm:    "python\n",
			environ: "SLURM_JOB_ID=4242\x00SLURM_JOB_ACCOUNT=physics\x00HOME=/home/alice\x00",
		},
		77: {
			status: "Name:\tdefunct job\nUid:\t1001\t1001\t1001\t1001\n",
			cgroup: "0::/user.slice/user-1001.slice/session-4.scope\n",
			stat:   "77 (defunct job) Z 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 123 0 0\n",
		},
	}
}

func TestReaderAttribute(t *testing.T) {
	r := NewReader(writeFakeProc(t, fakeTree()), writePasswd(t, fakePasswd), nil)
	tests := []struct {
		pid  int
		want gpu.Process
	}{
		{1234, gpu.Process{PID: 1234, User: "alice", Command: "python3 train.py --batch 64", Container: "k8s:" + podDsh + "/3c8e1a5f0b2d", MemUsed: 1 << 30}},
		{2000, gpu.Process{PID: 2000, User: "4242", Command: "/opt/conda/bin/python -m jupyter lab", Container: "docker:9f8e7d6c5b4a", MemUsed: 1 << 30}},
		{5150, gpu.Process{PID: 5150, User: "alice", Command: "python train.py", Job: "slurm:4242", Account: "physics", MemUsed: 1 << 30}},
		{3, gpu.Process{PID: 3, User: "root", Command: "[kworker/0:1]", Container: "", MemUsed: 1 << 30}},
		{77, gpu.Process{PID: 77, User: "alice", Command: "[defunct job]", Container: "", MemUsed: 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.pid), func(t *testing.T) {
			got := gpu.Process{PID: tt.pid, Container: "stale", MemUsed: 1 << 30}
			r.Attribute(&got)
			if got != tt.want {
				t.Errorf("Attribute(PID %d) = %+v, want %+v", tt.pid, got, tt.want)
			}
		})
	}
}

func TestReaderAttributeMissingPID(t *testing.T) {
	r := NewReader(writeFakeProc(t, fakeTree()), writePasswd(t, fakePasswd), nil)
	for _, pid := range []int{999, 0, -1} {
		want := gpu.Process{PID: pid, MemUsed: 42}
		got := want
		r.Attribute(&got)
		if got != want {
			t.Errorf("Attribute(PID %d) = %+v, want %+v (unchanged)", pid, got, want)
		}
	}
	r.Attribute(nil) // must not panic
}

func TestReaderAttributeMissingPasswd(t *testing.T) {
	r := NewReader(writeFakeProc(t, fakeTree()), filepath.Join(t.TempDir(), "no-passwd"), nil)
	p := gpu.Process{PID: 1234}
	r.Attribute(&p)
	if p.User != "1001" {
		t.Errorf("User without a passwd file = %q, want %q", p.User, "1001")
	}
}

func TestReaderPasswdReloadedWhenChanged(t *testing.T) {
	passwd := writePasswd(t, fakePasswd)
	r := NewReader(writeFakeProc(t, fakeTree()), passwd, nil)
	p := gpu.Process{PID: 2000}
	r.Attribute(&p)
	if p.User != "4242" {
		t.Fatalf("User before the user is added = %q, want %q", p.User, "4242")
	}
	// The added line changes the file's size, so no clock is needed to see
	// the change.
	if err := os.WriteFile(passwd, []byte(fakePasswd+"bob:x:4242:4242::/home/bob:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Attribute(&p)
	if p.User != "bob" {
		t.Errorf("User after the user is added = %q, want %q", p.User, "bob")
	}
}

func TestNewReaderDefaults(t *testing.T) {
	r := NewReader("", "", nil)
	if r.procRoot != "/proc" || r.passwdPath != "/etc/passwd" {
		t.Errorf("NewReader(\"\", \"\") reads %q and %q, want %q and %q", r.procRoot, r.passwdPath, "/proc", "/etc/passwd")
	}
}

func TestReaderAttributeRealProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs the Linux proc file system")
	}
	want := strconv.Itoa(os.Getuid())
	if text, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, line := range strings.Split(string(text), "\n") {
			f := strings.Split(line, ":")
			if len(f) > 2 && f[2] == want {
				want = f[0]
				break
			}
		}
	}
	p := gpu.Process{PID: os.Getpid()}
	NewReader("", "", nil).Attribute(&p)
	if p.User != want {
		t.Errorf("User of this test = %q, want %q", p.User, want)
	}
	if !strings.HasPrefix(p.Command, os.Args[0]) {
		t.Errorf("Command of this test = %q, want it to start with %q", p.Command, os.Args[0])
	}
}

func BenchmarkReaderAttribute(b *testing.B) {
	r := NewReader(writeFakeProc(b, fakeTree()), writePasswd(b, fakePasswd), nil)
	b.ReportAllocs()
	for b.Loop() {
		p := gpu.Process{PID: 1234}
		r.Attribute(&p)
	}
}
