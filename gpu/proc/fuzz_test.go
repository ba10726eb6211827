package proc

import (
	"math"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func FuzzParseCgroup(f *testing.F) {
	f.Add("0::/\n")
	f.Add("0::/system.slice/docker-" + cid + ".scope\n")
	f.Add("12:pids:/docker/" + cid + "\n1:name=systemd:/docker/" + cid + "\n")
	f.Add("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/cri-containerd-" + cid + ".scope\n")
	f.Add("11:memory:/kubepods/besteffort/pod" + podDsh + "/" + cid + "\n")
	f.Add("0::/machine.slice/crio-conmon-" + cid + ".scope\n")
	f.Add("0::/lxc.payload.trainer/system.slice/cron.service\n")
	f.Add("::\n:\n0::/kubepods/pod/\n")
	const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._/-"
	prefixes := []string{"k8s:", "docker:", "containerd:", "cri-o:", "podman:", "lxc:", "container:"}
	f.Fuzz(func(t *testing.T, text string) {
		got := ParseCgroup(text)
		if got == "" {
			return
		}
		known := false
		for _, p := range prefixes {
			known = known || strings.HasPrefix(got, p)
		}
		if !known {
			t.Errorf("ParseCgroup(%q) = %q, want \"\" or one of the documented forms", text, got)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return !strings.ContainsRune(idChars, r) }) {
			t.Errorf("ParseCgroup(%q) = %q, want only letters, digits and \":._/-\"", text, got)
		}
		if again := ParseCgroup(text); again != got {
			t.Errorf("ParseCgroup(%q) = %q then %q, want the same", text, got, again)
		}
	})
}

func FuzzParseSlurmJob(f *testing.F) {
	f.Add("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n")
	f.Add("11:devices:/slurm/uid_1000/job_4242/step_0/task_0\n")
	f.Add("5:freezer:/slurm_node01/uid_1001/job_99/step_extern\n")
	f.Add("0::/slurm/job_\n0::/slurm/job_99999999999999999999999\n")
	f.Fuzz(func(t *testing.T, text string) {
		got := ParseSlurmJob(text)
		if got == "" {
			return
		}
		id, ok := strings.CutPrefix(got, "slurm:")
		if !ok || id == "" || strings.ContainsFunc(id, func(r rune) bool { return r < '0' || r > '9' }) {
			t.Errorf("ParseSlurmJob(%q) = %q, want \"\" or slurm:DIGITS", text, got)
		}
		if !strings.Contains(text, "job_"+id) {
			t.Errorf("ParseSlurmJob(%q) = %q, want a job the text names", text, got)
		}
	})
}

func FuzzParseSlurmAccount(f *testing.F) {
	f.Add("SLURM_JOB_ID=4242\x00SLURM_JOB_ACCOUNT=physics\x00")
	f.Add("SLURM_JOB_ACCOUNT=\x00SLURM_JOB_ACCOUNT=a b\x00")
	f.Add("SLURM_JOB_ACCOUNT=x")
	f.Fuzz(func(t *testing.T, text string) {
		got := ParseSlurmAccount(text)
		if got == "" {
			return
		}
		if !isAccountName(got) || !strings.Contains(text, "SLURM_JOB_ACCOUNT="+got) {
			t.Errorf("ParseSlurmAccount(%q) = %q, want an account the text names", text, got)
		}
	})
}

func FuzzParseStatusUID(f *testing.F) {
	f.Add(statusFixture)
	f.Add("Uid:\t0\t0\t0\t0\n")
	f.Add("Uid:\t4294967296\n")
	f.Add("Uid:\n")
	f.Add("Name:\tx\n")
	f.Fuzz(func(t *testing.T, text string) {
		uid, ok := ParseStatusUID(text)
		if !ok {
			if uid != 0 {
				t.Errorf("ParseStatusUID(%q) = %d, false, want 0 with false", text, uid)
			}
			return
		}
		if uid < 0 || uid > math.MaxUint32 {
			t.Errorf("ParseStatusUID(%q) = %d, want a uid in [0, 2^32)", text, uid)
		}
		if !strings.Contains(text, "Uid:") {
			t.Errorf("ParseStatusUID(%q) found a uid, want none without a Uid: line", text)
		}
	})
}

func FuzzParsePasswd(f *testing.F) {
	f.Add(fakePasswd)
	f.Add("# c\n+@nis::::::\nx:x:1:1\n:x:2:2::/:/bin/sh\n")
	f.Add("a:x:99999999999:1::/:/bin/sh\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		for uid, name := range ParsePasswd(text) {
			if uid < 0 || uid > math.MaxUint32 {
				t.Errorf("ParsePasswd(%q) has uid %d, want a uid in [0, 2^32)", text, uid)
			}
			if name == "" || strings.ContainsAny(name, ":\n") {
				t.Errorf("ParsePasswd(%q) has name %q for uid %d, want a non-empty name without ':' or newline", text, name, uid)
			}
		}
	})
}

func FuzzParseCmdline(f *testing.F) {
	f.Add([]byte("python3\x00train.py\x00--epochs\x0010\x00"))
	f.Add([]byte(""))
	f.Add([]byte("\x00\x00"))
	f.Add([]byte("sh\x00-c\x00a\nb\x1b[31m\xff\x00"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := ParseCmdline(raw)
		if !utf8.ValidString(got) {
			t.Errorf("ParseCmdline(%q) = %q, want valid UTF-8", raw, got)
		}
		if strings.TrimSpace(got) != got {
			t.Errorf("ParseCmdline(%q) = %q, want no surrounding space", raw, got)
		}
		if strings.ContainsFunc(got, unicode.IsControl) {
			t.Errorf("ParseCmdline(%q) = %q, want no control characters", raw, got)
		}
	})
}

func FuzzParseStatComm(f *testing.F) {
	f.Add("2 (kthreadd) S 0 0 0 0 -1\n")
	f.Add("77 (a (b) c) R 1\n")
	f.Add("9 )x( Z 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		comm, ok := parseStatComm(text)
		if ok != (strings.Contains(text, "("+comm+")")) {
			t.Errorf("parseStatComm(%q) = %q, %v, want ok exactly when the name is in parentheses", text, comm, ok)
		}
	})
}

func FuzzParsePodLogDir(f *testing.F) {
	f.Add("ml-team_train-llama-0_" + podDsh)
	f.Add("kube-system_etcd-node-1_6d9c2c3a0b4e5f60718293a4b5c6d7e8")
	f.Add("a_b_c_d")
	f.Add("__")
	f.Fuzz(func(t *testing.T, dir string) {
		ns, pod, uid, ok := ParsePodLogDir(dir)
		if !ok {
			if ns != "" || pod != "" || uid != "" {
				t.Errorf("ParsePodLogDir(%q) = %q, %q, %q, false; want empty parts", dir, ns, pod, uid)
			}
			return
		}
		// What it names is the folder, and a name of a form that reaches
		// chat messages only in letters, digits, '-' and '.'.
		if !strings.EqualFold(ns+"_"+pod+"_"+uid, dir) {
			t.Errorf("ParsePodLogDir(%q) = %q, %q, %q: not the folder's parts", dir, ns, pod, uid)
		}
		if strings.ContainsFunc(ns+pod+uid, func(r rune) bool { return !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-.", r) }) {
			t.Errorf("ParsePodLogDir(%q) = %q, %q, %q: want only a-z, 0-9, '-' and '.'", dir, ns, pod, uid)
		}
	})
}
