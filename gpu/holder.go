package gpu

import (
	"strconv"
	"strings"
)

// PodProcess is the Process that stands for a Kubernetes pod holding a
// GPU when the source names the pod but not its processes, as
// dcgm-exporter does: PID 0, no user, Container
// "k8s:NAMESPACE/POD/CONTAINER" (the container's name, "" when not said).
func PodProcess(namespace, pod, container string) Process {
	c := "k8s:" + namespace + "/" + pod
	if container != "" {
		c += "/" + container
	}
	return Process{Container: c}
}

// Pod returns the namespace, name and container of the pod a PodProcess
// stands for; ok is false for a process the source names.
func (p *Process) Pod() (namespace, pod, container string, ok bool) {
	rest, isK8s := strings.CutPrefix(p.Container, "k8s:")
	if p.PID != 0 || p.User != "" || !isK8s {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", "", "", false
	}
	if len(parts) == 3 {
		container = parts[2]
	}
	return parts[0], parts[1], container, true
}

// Holder names what holds the GPU, for people: "pid 4242", "job 4242, pid
// 5150" for a process of a Slurm job, or for a pod the source names
// without its processes "pod ml/train-0, container trainer"; "" when the
// source names neither (a user's share, PID 0).
func (p *Process) Holder() string {
	if ns, pod, c, ok := p.Pod(); ok {
		text := "pod " + ns + "/" + pod
		if c != "" {
			text += ", container " + c
		}
		return text
	}
	var parts []string
	if id, ok := p.SlurmJob(); ok {
		parts = append(parts, "job "+id)
	}
	if p.PID > 0 {
		parts = append(parts, "pid "+strconv.Itoa(p.PID))
	}
	return strings.Join(parts, ", ")
}

// SlurmJob returns the ID of the Slurm job the process belongs to; ok is
// false outside a Slurm job.
func (p *Process) SlurmJob() (id string, ok bool) {
	id, ok = strings.CutPrefix(p.Job, "slurm:")
	return id, ok && id != ""
}

// Owner is whom the process's use counts for: its user, or for a pod the
// source names without its processes the pod, "NAMESPACE/POD"; "" when
// unknown. A process of a named pod whose user says nothing of whom it
// runs for (root, or a bare uid the host does not name, as a container's
// users mostly are) counts for its pod too.
func (p *Process) Owner() string {
	if !strings.HasPrefix(p.Container, "k8s:") {
		return p.User // no pod: the rollups ask this of every process at every sample
	}
	if ns, pod, _, ok := p.Pod(); ok {
		return ns + "/" + pod
	}
	if ns, pod, ok := p.NamedPod(); ok && anonymousUser(p.User) {
		return ns + "/" + pod
	}
	return p.User
}

// SameJob reports whether two processes belong to one job, for telling
// apart the jobs that share a GPU (time-slicing, MPS, a notebook beside a
// trainer): the same Slurm job, else the same container or pod, else the
// same user and command. The processes of one job (a launcher and its
// workers, the ranks of a container) are of the same job.
func SameJob(a, b *Process) bool {
	switch {
	case a.Job != "" || b.Job != "":
		return a.Job == b.Job
	case a.Container != "" || b.Container != "":
		return a.Container == b.Container
	}
	return a.User == b.User && a.Command == b.Command
}

// CountJobs returns how many jobs (see SameJob) hold memory on a GPU whose
// processes are ps: a process whose memory the source does not report
// (a pod dcgm-exporter names) holds none that gpuwatch can see.
func CountJobs(ps []Process) int {
	n := 0
next:
	for i := range ps {
		if ps[i].MemUsed == 0 {
			continue
		}
		for k := range i {
			if ps[k].MemUsed > 0 && SameJob(&ps[k], &ps[i]) {
				continue next
			}
		}
		n++
	}
	return n
}

// NamedPod returns the namespace and name of the pod a process runs in,
// when the source names it ("k8s:NAMESPACE/POD[/CONTAINER]"); false for a
// pod known by its UID alone ("k8s:POD-UID/ID") and outside pods.
func (p *Process) NamedPod() (ns, pod string, ok bool) {
	rest, isK8s := strings.CutPrefix(p.Container, "k8s:")
	if !isK8s {
		return "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" || isPodUID(parts[0]) {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// anonymousUser reports whether a user name says nothing of whom a pod's
// process runs for: none, root, or a bare uid.
func anonymousUser(user string) bool {
	if user == "" || user == "root" {
		return true
	}
	for i := 0; i < len(user); i++ {
		if user[i] < '0' || user[i] > '9' {
			return false
		}
	}
	return true
}

// isPodUID reports whether s has a pod UID's shape, 8-4-4-4-12 hex
// digits.
func isPodUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// Who names whom a process's use is for, for people: "job 4242 (alice)"
// for a process of a Slurm job (its user in brackets when known), the pod
// "NAMESPACE/POD" for a pod the source names without its processes, else
// the user; "" when unknown.
func (p *Process) Who() string {
	if id, ok := p.SlurmJob(); ok {
		if p.User == "" {
			return "job " + id
		}
		return "job " + id + " (" + p.User + ")"
	}
	return p.Owner()
}
