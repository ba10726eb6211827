package metrics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
)

// Bounds of the per-user and per-process series.
const (
	// MaxUsersPerGPU is how many users of one GPU get series of their
	// own; the others are summed as OtherUsers, so a shared GPU's
	// cardinality stays bounded whoever logs in.
	MaxUsersPerGPU = 10
	// OtherUsers is the user the smaller users of a GPU are summed as.
	OtherUsers = "other"
	// MaxCommandLabel is how many characters of a command line the
	// per-process series keep.
	MaxCommandLabel = 80
)

// userUse is one user's share of a GPU.
type userUse struct {
	name  string
	mem   uint64
	procs int
}

// usersOf sums a GPU's processes by user, largest memory first (then by
// name), the users past MaxUsersPerGPU summed as OtherUsers. Processes
// without a user count as digest.RollupUnknownUser, as in the digests; a
// user who is called "other" shares the line of the others.
func usersOf(procs []gpu.Process) []userUse {
	var users []userUse
	add := func(name string, mem uint64, n int) {
		for i := range users {
			if users[i].name == name {
				users[i].mem += mem
				users[i].procs += n
				return
			}
		}
		users = append(users, userUse{name, mem, n})
	}
	for i := range procs {
		name := procs[i].User
		if name == "" {
			name = digest.RollupUnknownUser
		}
		add(name, procs[i].MemUsed, 1)
	}
	slices.SortFunc(users, func(a, b userUse) int { return cmp.Or(cmp.Compare(b.mem, a.mem), cmp.Compare(a.name, b.name)) })
	out := users[:0]
	other := userUse{name: OtherUsers}
	for _, u := range users {
		if u.name != OtherUsers && len(out) < MaxUsersPerGPU {
			out = append(out, u)
			continue
		}
		other.mem, other.procs = other.mem+u.mem, other.procs+u.procs
	}
	if other.procs > 0 {
		out = append(out, other)
	}
	return out
}

// collectUsers sends each user's memory on GPU d and their share of its
// utilization: by their share of its process memory or, when its
// processes hold none (a source that does not say), by their share of its
// processes.
func (c *Collector) collectUsers(ch chan<- prometheus.Metric, host string, d *gpu.Device) {
	if len(d.Processes) == 0 {
		return
	}
	users := usersOf(d.Processes)
	var total uint64
	for _, u := range users {
		total += u.mem
	}
	index := strconv.Itoa(d.Index)
	for _, u := range users {
		send(ch, c.userMem, prometheus.GaugeValue, float64(u.mem), index, d.UUID, host, u.name)
		if !known(d.UtilGPU) {
			continue
		}
		share := float64(u.procs) / float64(len(d.Processes))
		if total > 0 {
			share = float64(u.mem) / float64(total)
		}
		send(ch, c.userUtil, prometheus.GaugeValue, d.UtilGPU/100*share, index, d.UUID, host, u.name)
	}
}

// processMemDesc is gpuwatch_gpu_process_memory_bytes with a label
// label_KEY for each pod label key (gpu.PodLabelExportName).
func processMemDesc(podKeys []string) *prometheus.Desc {
	labels := []string{"gpu", "uuid", "host", "pid", "user", "command", "container"}
	for _, k := range podKeys {
		labels = append(labels, gpu.PodLabelExportName(k))
	}
	return prometheus.NewDesc("gpuwatch_gpu_process_memory_bytes",
		"GPU memory held by one process, in bytes (config metrics.per_process; command clipped to "+strconv.Itoa(MaxCommandLabel)+
			" characters; the pod labels of metrics.pod_labels as label_KEY).", labels, nil)
}

// processSeries are the per-process series of one scrape: their
// description, with the pod label keys of this scrape.
type processSeries struct {
	desc    *prometheus.Desc
	podKeys []string
}

// processKey is a per-process series' labels after gpu, uuid and host.
type processKey struct {
	pid, user, command, container string
	pod                           gpu.PodLabels
}

// collect sends the memory of each process on GPU d. Processes with the
// same labels (a PID that NVML lists twice) are summed: one series each.
func (s *processSeries) collect(ch chan<- prometheus.Metric, host string, d *gpu.Device) {
	if len(d.Processes) == 0 {
		return
	}
	mem := make(map[processKey]uint64, len(d.Processes))
	for i := range d.Processes {
		p := &d.Processes[i]
		k := processKey{strconv.Itoa(p.PID), p.User, clipRunes(p.Command, MaxCommandLabel), p.Container, ""}
		if len(s.podKeys) > 0 {
			k.pod = p.PodLabels
		}
		mem[k] += p.MemUsed
	}
	index := strconv.Itoa(d.Index)
	labels := make([]string, 0, 7+len(s.podKeys))
	for k, v := range mem {
		labels = append(labels[:0], index, d.UUID, host, k.pid, k.user, k.command, k.container)
		for _, key := range s.podKeys {
			value, _ := k.pod.Get(key)
			labels = append(labels, value)
		}
		send(ch, s.desc, prometheus.GaugeValue, float64(v), labels...)
	}
}

// clipRunes cuts s to at most n characters.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
