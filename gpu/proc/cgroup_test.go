package proc

import "testing"

// Container ids and pod uids of the fixtures below, in the shapes runtimes
// and the kubelet write them.
const (
	cid    = "3c8e1a5f0b2d4e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f"
	cid2   = "9f8e7d6c5b4a39281706f5e4d3c2b1a0fedcba9876543210fedcba9876543210"
	podDsh = "5e3c2a1b-7d4f-4a8e-9b0c-1d2e3f4a5b6c"
	podUnd = "5e3c2a1b_7d4f_4a8e_9b0c_1d2e3f4a5b6c"
)

func TestParseCgroup(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", ""},
		{"v2 root", "0::/\n", ""},
		{"v2 user session", "0::/user.slice/user-1000.slice/session-3.scope\n", ""},
		{"v2 system service", "0::/system.slice/nvidia-persistenced.service\n", ""},
		{"v1 host process", "12:pids:/user.slice/user-1000.slice\n11:memory:/user.slice\n1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n", ""},
		{"v1 docker cgroupfs", "12:pids:/docker/" + cid + "\n11:memory:/docker/" + cid + "\n2:cpu,cpuacct:/docker/" + cid + "\n1:name=systemd:/docker/" + cid + "\n0::/system.slice/containerd.service\n", "docker:3c8e1a5f0b2d"},
		{"v2 docker systemd", "0::/system.slice/docker-" + cid + ".scope\n", "docker:3c8e1a5f0b2d"},
		{"v2 docker cgroupfs", "0::/docker/" + cid + "\n", "docker:3c8e1a5f0b2d"},
		{"v2 rootless docker", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" + cid + ".scope\n", "docker:3c8e1a5f0b2d"},
		{"v2 docker service is no container", "0::/system.slice/docker.service\n", ""},
		{"v1 containerd", "4:memory:/containerd/" + cid + "\n1:name=systemd:/containerd/" + cid + "\n", "containerd:3c8e1a5f0b2d"},
		{"v2 cri-containerd scope", "0::/system.slice/cri-containerd-" + cid + ".scope\n", "containerd:3c8e1a5f0b2d"},
		{"v2 nerdctl", "0::/system.slice/nerdctl-" + cid + ".scope\n", "containerd:3c8e1a5f0b2d"},
		{"v2 crio", "0::/machine.slice/crio-" + cid + ".scope\n", "cri-o:3c8e1a5f0b2d"},
		{"v2 crio conmon ignored", "0::/machine.slice/crio-conmon-" + cid + ".scope\n", ""},
		{"v2 podman", "0::/machine.slice/libpod-" + cid + ".scope\n", "podman:3c8e1a5f0b2d"},
		{"v2 podman payload subgroup", "0::/machine.slice/libpod-" + cid + ".scope/container\n", "podman:3c8e1a5f0b2d"},
		{"v2 podman conmon ignored", "0::/machine.slice/libpod-conmon-" + cid + ".scope\n", ""},
		{"v2 rootless podman", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope\n", "podman:3c8e1a5f0b2d"},
		{"v1 podman cgroupfs", "3:memory:/libpod_parent/libpod-" + cid + "\n", "podman:3c8e1a5f0b2d"},
		{"v1 k8s burstable cgroupfs docker", "11:memory:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n1:name=systemd:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v1 k8s besteffort cgroupfs", "5:devices:/kubepods/besteffort/pod" + podDsh + "/" + cid + "\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v1 k8s guaranteed cgroupfs", "5:devices:/kubepods/pod" + podDsh + "/" + cid + "\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v2 k8s burstable systemd containerd", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/cri-containerd-" + cid + ".scope\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v2 k8s besteffort systemd crio", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUnd + ".slice/crio-" + cid + ".scope\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v2 k8s guaranteed systemd docker", "0::/kubepods.slice/kubepods-pod" + podUnd + ".slice/docker-" + cid + ".scope\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v2 k8s crio container subgroup", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/crio-" + cid + ".scope/container\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v2 k8s pod level only", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice\n", "k8s:" + podDsh},
		{"v2 k8s conmon is pod level", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUnd + ".slice/crio-conmon-" + cid + ".scope\n", "k8s:" + podDsh},
		{"v2 k8s static pod hash uid", "0::/kubepods/burstable/pod6e1d4b5bdfc3b8b7e3b0f8b5f9b39f3e/" + cid + "\n", "k8s:6e1d4b5bdfc3b8b7e3b0f8b5f9b39f3e/3c8e1a5f0b2d"},
		{"v2 kind node in docker", "0::/system.slice/docker-" + cid2 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + podUnd + ".slice/cri-containerd-" + cid + ".scope\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"v1 pod wins over plain line", "2:cpu:/docker/" + cid2 + "\n1:memory:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n", "k8s:" + podDsh + "/3c8e1a5f0b2d"},
		{"nested docker innermost", "0::/docker/" + cid2 + "/docker/" + cid + "\n", "docker:3c8e1a5f0b2d"},
		{"pod segment outside kubepods is no pod", "0::/system.slice/pod" + podDsh + "\n", ""},
		{"short pod uid is no pod", "0::/kubepods/burstable/pod12345/" + cid + "\n", "container:3c8e1a5f0b2d"},
		{"unknown cgroup parent", "0::/actions_job/" + cid + "\n", "container:3c8e1a5f0b2d"},
		{"docker prefix with no id", "0::/system.slice/docker-compose@web.service\n", ""},
		{"short hex under docker is too short", "0::/docker/3c8e1a5f\n", ""},
		{"lxd v2", "0::/lxc.payload.trainer/system.slice/cron.service\n", "lxc:trainer"},
		{"lxc v1", "7:memory:/lxc/trainer\n", "lxc:trainer"},
		{"lxc name with a control character", "0::/lxc.payload.bad\rname\n", ""},
		{"lxc v1 name with a space", "7:memory:/lxc/my box\n", ""},
		{"lxc monitor is no container", "0::/lxc.monitor.trainer\n", ""},
		{"outside own cgroup namespace", "0::/../../../user.slice\n", ""},
		{"crlf line ends", "0::/docker/" + cid + "\r\n", "docker:3c8e1a5f0b2d"},
		{"no trailing newline", "0::/system.slice/docker-" + cid + ".scope", "docker:3c8e1a5f0b2d"},
		{"colon in path", "0::/weird:name/docker-" + cid + ".scope\n", "docker:3c8e1a5f0b2d"},
		{"garbage lines skipped", "not a cgroup line\n\n::\n0::/docker/" + cid + "\n", "docker:3c8e1a5f0b2d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCgroup(tt.text); got != tt.want {
				t.Errorf("ParseCgroup(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func BenchmarkParseCgroup(b *testing.B) {
	text := "12:pids:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n" +
		"11:memory:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n" +
		"1:name=systemd:/kubepods/burstable/pod" + podDsh + "/" + cid + "\n" +
		"0::/\n"
	b.ReportAllocs()
	for b.Loop() {
		if got := ParseCgroup(text); got == "" {
			b.Fatalf("ParseCgroup = %q, want a pod", got)
		}
	}
}
