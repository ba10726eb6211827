package proc

import "strings"

// shortIDLen is how many characters of a container id ParseCgroup keeps,
// the length docker ps, crictl ps and podman ps print.
const shortIDLen = 12

// Ranks of the answers ParseCgroup can give for one cgroup path, from the
// least to the most specific. A Kubernetes pod names the workload better than a bare runtime
// container id, so when the lines of a cgroup v1 file disagree the higher
// rank wins.
const (
	rankNone = iota
	rankRuntime
	rankPod
)

// cutRuntimePrefix splits the name of a systemd scope (or cgroupfs
// directory) that a container runtime created into the runtime's name in
// ParseCgroup's output and the rest of the name. Longer prefixes are tried
// first so "cri-containerd-" is not taken for "containerd-".
func cutRuntimePrefix(name string) (runtime, rest string, ok bool) {
	prefixes := [...]struct{ prefix, runtime string }{
		{"cri-containerd-", "containerd"},
		{"containerd-", "containerd"},
		{"nerdctl-", "containerd"},
		{"docker-", "docker"},
		{"crio-", "cri-o"},
		{"libpod-", "podman"},
	}
	for _, p := range prefixes {
		if rest, found := strings.CutPrefix(name, p.prefix); found {
			return p.runtime, rest, true
		}
	}
	return "", "", false
}

// runtimeOfParent names the runtime that puts one cgroupfs directory per
// container, named by the bare container id, under a directory called
// parent, or returns "" when parent is no such directory.
func runtimeOfParent(parent string) string {
	switch parent {
	case "docker":
		return "docker"
	case "containerd":
		return "containerd"
	case "libpod_parent":
		return "podman"
	}
	return ""
}

// ParseCgroup returns the container a process runs in, read from the text of
// its /proc/PID/cgroup file, or "" when the process is not in a container.
//
// Both cgroup v1 (one "ID:controllers:/path" line per hierarchy) and v2 (the
// single line "0::/path") are understood, with the systemd and the cgroupfs
// cgroup drivers. The result has one of these forms, where ID is the first 12
// characters of the container id, as docker ps and crictl ps print it:
//
//	k8s:POD-UID/ID    a container of a Kubernetes pod (docker, containerd or
//	                  cri-o); the pod uid is given with dashes, whichever
//	                  driver wrote it with underscores
//	k8s:POD-UID       a process of a pod outside any container of it
//	docker:ID         a docker container
//	containerd:ID     a containerd container (cri-containerd, nerdctl)
//	cri-o:ID          a cri-o container
//	podman:ID         a podman (libpod) container
//	lxc:NAME          an LXC or LXD container
//	container:ID      a directory named by a 64-hex-digit id under a parent
//	                  ParseCgroup does not know (docker --cgroup-parent)
//
// Runtime helpers such as conmon (crio-conmon-ID.scope, libpod-conmon-ID.scope)
// are not containers. When containers nest, the innermost one is returned.
// Lines that do not have the "ID:controllers:path" shape are skipped, so any
// text gives a result and no error.
func ParseCgroup(text string) string {
	best, bestRank := "", rankNone
	for line := range strings.Lines(text) {
		_, rest, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if id, rank := containerOfPath(path); rank > bestRank {
			best, bestRank = id, rank
		}
	}
	return best
}

// containerOfPath identifies the container of one cgroup path and ranks the
// answer; rankNone means the path is not a container's.
func containerOfPath(path string) (string, int) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	pod, podAt := "", -1
	for i, seg := range segs {
		if uid, ok := podUID(segs[:i], seg); ok {
			pod, podAt = uid, i
		}
	}
	if podAt >= 0 {
		for i := podAt + 1; i < len(segs); i++ {
			if _, id, ok := containerSegment(segs[:i], segs[i]); ok {
				return "k8s:" + pod + "/" + id, rankPod
			}
		}
		return "k8s:" + pod, rankPod
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if runtime, id, ok := containerSegment(segs[:i], segs[i]); ok {
			return runtime + ":" + id, rankRuntime
		}
	}
	return "", rankNone
}

// podUID reports whether seg is the cgroup of a Kubernetes pod, given the
// segments above it, and returns the pod's uid with dashes. The cgroupfs
// driver writes ".../kubepods/burstable/pod<uid>", the systemd driver
// ".../kubepods-burstable-pod<uid_with_underscores>.slice".
func podUID(parents []string, seg string) (string, bool) {
	var uid string
	switch {
	case strings.HasSuffix(seg, ".slice") && strings.Contains(seg, "kubepods"):
		i := strings.LastIndex(seg, "-pod")
		if i < 0 {
			return "", false
		}
		uid = seg[i+len("-pod") : len(seg)-len(".slice")]
	case strings.HasPrefix(seg, "pod") && underKubepods(parents):
		uid = seg[len("pod"):]
	default:
		return "", false
	}
	uid = strings.ReplaceAll(uid, "_", "-")
	// Pod uids are UUIDs, or 32 hex digits for static pods.
	if len(uid) < 32 || !isHexOrDash(uid) {
		return "", false
	}
	return strings.ToLower(uid), true
}

// underKubepods reports whether one of the segments is the kubelet's
// cgroupfs root ("kubepods", or "kubepods" below a custom cgroup root).
func underKubepods(segs []string) bool {
	for _, s := range segs {
		if s == "kubepods" {
			return true
		}
	}
	return false
}

// containerSegment reports whether seg, below the segments parents, is the
// cgroup of a container, and returns the runtime and the short id.
func containerSegment(parents []string, seg string) (runtime, id string, ok bool) {
	if name, found := strings.CutPrefix(seg, "lxc.payload."); found {
		return "lxc", name, isLXCName(name)
	}
	parent := ""
	if len(parents) > 0 {
		parent = parents[len(parents)-1]
	}
	if parent == "lxc" {
		return "lxc", seg, isLXCName(seg)
	}
	name := strings.TrimSuffix(seg, ".scope")
	if rt, rest, found := cutRuntimePrefix(name); found {
		if strings.HasPrefix(rest, "conmon-") || !isContainerID(rest) {
			return "", "", false
		}
		return rt, rest[:shortIDLen], true
	}
	if !isContainerID(name) {
		return "", "", false
	}
	if rt := runtimeOfParent(parent); rt != "" {
		return rt, name[:shortIDLen], true
	}
	if len(name) == 64 {
		return "container", name[:shortIDLen], true
	}
	return "", "", false
}

// isContainerID reports whether s looks like a container id: lower-case hex
// digits, at least as long as the short form.
func isContainerID(s string) bool {
	if len(s) < shortIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isLXCName reports whether s is a plausible LXC or LXD container name:
// letters, digits, '.', '_' and '-'. Anything else is not taken for a name,
// so that a strange cgroup path never reaches a log or a chat message.
func isLXCName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && c != '_' && c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// isHexOrDash reports whether s holds only hex digits and dashes.
func isHexOrDash(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}
