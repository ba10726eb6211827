package slackbot

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
	"github.com/gpuwatch/gpuwatch/rules"
)

// fleet is the latest snapshot of every host, sorted by host, as the
// answers read it: one host reads as it always did; several are a fleet.
type fleet []*gpu.Snapshot

// fleet reads the backend's snapshots, leaving out nil ones.
func (a *App) fleet() fleet {
	var f fleet
	for _, s := range a.backend.Snapshots() {
		if s != nil {
			f = append(f, s)
		}
	}
	return f
}

// several reports whether the answers must say which host each GPU is on.
func (f fleet) several() bool { return len(f) > 1 }

// maxNamedHosts is how many hosts an answer names one by one: the hosts a
// command could have meant, in an error; the hosts with alerts and no
// GPU, in /gpu status.
const maxNamedHosts = 10

// pick returns the snapshots a command about host covers: every host's
// for "", else the host's, found by its exact name, by its name in another
// case, or by its short name (node1 for node1.example.org) when one host
// alone has it. An unknown host is an error listing the hosts there are.
func (f fleet) pick(host string) (fleet, error) {
	if host == "" {
		return f, nil
	}
	var folded, short fleet
	for _, s := range f {
		switch {
		case s.Host == host:
			return fleet{s}, nil
		case strings.EqualFold(s.Host, host):
			folded = append(folded, s)
		case strings.EqualFold(shortHost(s.Host), host):
			short = append(short, s)
		}
	}
	switch {
	case len(folded) == 1:
		return folded, nil
	case len(folded) == 0 && len(short) == 1:
		return short, nil
	}
	return nil, fmt.Errorf("No host is called %s: %s", blockkit.EscapeClip(host, 60), f.names())
}

// shortHost is a host name up to its first dot.
func shortHost(h string) string {
	short, _, _ := strings.Cut(h, ".")
	return short
}

// names says which hosts there are, for an error: "the hosts are node1,
// node2 and node3", the first few of a large fleet.
func (f fleet) names() string {
	if len(f) == 0 {
		return "no host has reported yet"
	}
	if len(f) == 1 {
		return "the only host is " + blockkit.EscapeClip(f[0].Host, 60)
	}
	names := make([]string, 0, min(len(f), maxNamedHosts))
	for _, s := range f[:min(len(f), maxNamedHosts)] {
		names = append(names, blockkit.EscapeClip(s.Host, 60))
	}
	if len(f) > maxNamedHosts {
		return fmt.Sprintf("the %d hosts include %s, …", len(f), strings.Join(names, ", "))
	}
	return "the hosts are " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// gpuCount counts the GPUs jobs run on: whole GPUs and MIG instances, not
// the GPUs split into them.
func (f fleet) gpuCount() int {
	n := 0
	for _, s := range f {
		for i := range s.Devices {
			if s.Devices[i].RunsJobs() {
				n++
			}
		}
	}
	return n
}

// countGPUs counts whole GPUs (split into MIG instances or not) and MIG
// instances.
func countGPUs(devs []gpu.Device) (gpus, instances int) {
	for i := range devs {
		if devs[i].MIG != nil {
			instances++
		} else {
			gpus++
		}
	}
	return gpus, instances
}

// countWhole counts the whole GPUs among devs.
func countWhole(devs []gpu.Device) int {
	gpus, _ := countGPUs(devs)
	return gpus
}

// countInstancesAfter counts the MIG instances that follow devs[i], its
// own when it is a GPU split into them.
func countInstancesAfter(devs []gpu.Device, i int) int {
	n := 0
	for i+1+n < len(devs) && devs[i+1+n].MIG != nil && devs[i+1+n].MIG.ParentUUID == devs[i].UUID {
		n++
	}
	return n
}

// onHost reports whether an alert is about host. An alert without a host
// (a backend that serves one host) is about every host.
func onHost(al *ActiveAlert, host string) bool { return al.Host == "" || al.Host == host }

// onDevice reports whether an alert of host is about GPU d.
func onDevice(al *ActiveAlert, host string, d *gpu.Device) bool {
	return onHost(al, host) && al.GPU == d.Index && (al.UUID == "" || d.UUID == "" || al.UUID == d.UUID)
}

// alertsOn are the alerts about host.
func alertsOn(alerts []ActiveAlert, host string) []ActiveAlert {
	var out []ActiveAlert
	for i := range alerts {
		if onHost(&alerts[i], host) {
			out = append(out, alerts[i])
		}
	}
	return out
}

// use is what a GPU is doing now, as /gpu status counts it.
type use int

const (
	useFree     use = iota // no process and under 1 GiB of memory in use (rules.Held is false)
	useBusy                // held and computing, or held with utilization unknown
	useIdleHeld            // held while computing nothing (utilization under digest.BusyPercent)
	useMIG                 // split into MIG instances, which are free, busy or idle-held
)

// String is the use's name: free, busy, idle-held or mig.
func (u use) String() string {
	switch u {
	case useFree:
		return "free"
	case useIdleHeld:
		return "idle-held"
	case useMIG:
		return "mig"
	}
	return "busy"
}

// UseOf says what GPU d is doing now, as /gpu status and /gpu free count
// it: "free", "busy" or "idle-held"; "mig" for a GPU split into MIG
// instances, whose instances say theirs.
func UseOf(d *gpu.Device) string { return useOf(d).String() }

// useOf says what GPU d is doing now.
func useOf(d *gpu.Device) use {
	switch {
	case !d.RunsJobs():
		return useMIG
	case !rules.Held(d):
		return useFree
	case !math.IsNaN(d.UtilGPU) && d.UtilGPU < digest.BusyPercent:
		return useIdleHeld
	}
	return useBusy
}

// uses counts a host's (or a fleet's) GPUs by what they are doing.
type uses struct{ busy, idleHeld, free int }

func (u *uses) add(s *gpu.Snapshot) {
	for i := range s.Devices {
		switch useOf(&s.Devices[i]) {
		case useMIG: // its instances count
		case useFree:
			u.free++
		case useIdleHeld:
			u.idleHeld++
		default:
			u.busy++
		}
	}
}

// String is "5 busy, 1 idle-held, 2 free".
func (u uses) String() string {
	return fmt.Sprintf("%d busy, %d idle-held, %d free", u.busy, u.idleHeld, u.free)
}

// alertCounts counts alerts by state; a silenced alert counts as
// silenced, not firing.
type alertCounts struct{ firing, silenced, pending int }

func countAlerts(alerts []ActiveAlert) alertCounts {
	var c alertCounts
	for i := range alerts {
		switch {
		case alerts[i].State != "firing":
			c.pending++
		case alerts[i].Silenced != nil:
			c.silenced++
		default:
			c.firing++
		}
	}
	return c
}

// String is " · 🔥 2 firing · 🔕 1 silenced · ⏳ 1 pending", leaving out
// zero counts.
func (c alertCounts) String() string {
	var b strings.Builder
	if c.firing > 0 {
		fmt.Fprintf(&b, " · 🔥 %d firing", c.firing)
	}
	if c.silenced > 0 {
		fmt.Fprintf(&b, " · 🔕 %d silenced", c.silenced)
	}
	if c.pending > 0 {
		fmt.Fprintf(&b, " · ⏳ %d pending", c.pending)
	}
	return b.String()
}

// hostName is a host as answers show it, escaped and clipped.
func hostName(h string) string { return blockkit.EscapeClip(h, 60) }
