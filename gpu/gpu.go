// Package gpu holds what gpuwatch knows about a host's GPUs at one instant
// (a Snapshot) and the Source interface that produces snapshots. Its
// subpackages implement sources: nvml (the NVIDIA driver), sim (simulated
// workloads), replay (nvidia-smi CSV logs), and proc (process attribution).
//
// A snapshot carries its own time. Sources are the only part of gpuwatch that
// read the clock; everything downstream uses Snapshot.Time, so replays and
// tests are exact.
package gpu

import (
	"context"
	"math"
	"time"
)

// Snapshot is the state of every GPU on one host at one instant.
type Snapshot struct {
	Time    time.Time
	Host    string
	Devices []Device
	// Events happened since the previous snapshot: XID errors, lost GPUs.
	Events []Event
	// Down says why the host does not report, when the source knows it
	// cannot reach it (a hub's Prometheus fails to scrape the host's
	// exporter: up is 0). Devices is then empty: the host is down, its
	// GPUs are not missing. "" for a host that reports.
	Down string
}

// Device is one GPU's readings, or one MIG instance's (MIG is then set).
// Readings the GPU or the source does not provide are NaN, never zero;
// memory is unknown when MemTotal is 0.
//
// A GPU split into MIG instances appears as its parent Device (MIGEnabled,
// with the card's readings: temperature, power, events) followed by one
// Device per instance (with the instance's memory, utilization where the
// GPU measures it, and processes). The parent's memory and processes are
// its instances', so the parent leaves them unknown and empty: a rule on
// memory fires on the slice that fills, never on the card as well.
type Device struct {
	Index int
	UUID  string
	Name  string
	// MIG is set for a MIG instance: which slice of which GPU it is. nil
	// for a whole GPU.
	MIG *MIG
	// MIGEnabled says this whole GPU is split into MIG instances, which
	// follow it in the snapshot.
	MIGEnabled bool
	MemUsed    uint64 // bytes; known without MemTotal when above 0 (see MemUsedKnown)
	MemTotal   uint64 // bytes; 0 when unknown
	// MemReserved is the part of MemTotal the driver keeps for itself
	// (NVML's memory info v2, dcgm-exporter's FB_RESERVED, nvidia-smi's
	// memory.reserved): no job can allocate it, so a GPU is full when
	// MemUsed reaches MemTotal minus MemReserved. 0 when the source does
	// not say.
	MemReserved uint64  // bytes
	UtilGPU     float64 // percent
	UtilMem     float64 // percent
	TempC       float64 // degrees Celsius
	PowerW      float64 // watts
	PowerLimitW float64 // watts
	// Health is what the GPU says of its own health: ECC errors, row
	// remapping, throttling, PCIe and NVLink, fan and clocks; each reading
	// known or missing. A MIG instance leaves it empty: health is the
	// card's, read on its parent.
	Health    Health
	Processes []Process
}

// MemKnown reports whether the device's memory readings are known.
func (d *Device) MemKnown() bool { return d.MemTotal > 0 }

// MemUsedKnown reports whether MemUsed is a reading: memory is known, or
// the source knows the memory in use but not the total (a log that records
// memory.used without memory.total), which it says with a MemUsed above 0
// and a MemTotal of 0.
func (d *Device) MemUsedKnown() bool { return d.MemTotal > 0 || d.MemUsed > 0 }

// MemAllocatable is the memory jobs can allocate: the total less what the
// driver reserves, or 0 when memory is unknown.
func (d *Device) MemAllocatable() uint64 {
	if !d.MemKnown() || d.MemReserved >= d.MemTotal {
		return d.MemTotal
	}
	return d.MemTotal - d.MemReserved
}

// MemUsedPercent is the share of memory in use, in percent, or NaN when
// memory is unknown.
func (d *Device) MemUsedPercent() float64 {
	if !d.MemKnown() {
		return math.NaN()
	}
	return float64(d.MemUsed) / float64(d.MemTotal) * 100
}

// Process is one compute process on a GPU and who runs it.
type Process struct {
	PID       int    `json:"pid"`
	User      string `json:"user"`                // user name, from the process's real uid
	Command   string `json:"command"`             // command line, arguments separated by spaces
	Container string `json:"container,omitempty"` // "docker:ID", "k8s:NAMESPACE/POD", "k8s:POD-UID/ID", …, from the cgroup path
	// Job is the batch job the process belongs to, "slurm:4242", from the
	// cgroup path as Container is; "" outside a scheduler's job. A job
	// that leaves a GPU to another job is a change of hands.
	Job string `json:"job,omitempty"`
	// Account is the account the job charges (Slurm's --account), from
	// the job's environment; "" outside a job, or when unknown.
	Account string `json:"account,omitempty"`
	// PodLabels are labels of the process's Kubernetes pod: only those
	// the config asks for (people: and metrics.pod_labels), as a label
	// selector writes them, "owner=alice,team=vision"; "" outside pods,
	// or when none is asked for or known.
	PodLabels PodLabels `json:"pod_labels,omitempty"`
	MemUsed   uint64    `json:"memory_bytes"` // bytes of this GPU's memory the process holds
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventXID is an XID error reported by the driver.
	EventXID EventKind = iota + 1
	// EventGPULost means the GPU fell off the bus or stopped answering.
	EventGPULost
)

// String returns the event kind's name as logs and JSON show it.
func (k EventKind) String() string {
	switch k {
	case EventXID:
		return "xid"
	case EventGPULost:
		return "gpu_lost"
	}
	return "unknown"
}

// Event is something that happened to a GPU between two snapshots.
type Event struct {
	Time   time.Time
	Kind   EventKind
	GPU    int    // index of the GPU
	UUID   string // UUID of the GPU
	XID    uint64 // the XID code, for EventXID
	Detail string // a human-readable explanation
}

// Source produces snapshots, one per call to Next, in time order.
//
// Next blocks until the next snapshot is due (a live source waits for its
// interval; a replay returns at once) and returns io.EOF when the source has
// no more snapshots. A Source is used by one goroutine.
type Source interface {
	Next(ctx context.Context) (*Snapshot, error)
	Close() error
}

// Sampler reads the GPUs once. Live sources (NVML) are Samplers turned into a
// Source by Poll, which calls them on a ticker and passes the tick's time.
type Sampler interface {
	Sample(ctx context.Context, at time.Time) (*Snapshot, error)
	Close() error
}

// SourceError is a failure of a source that may pass: the query API of a
// hub's Prometheus does not answer, or answers with an error. The daemon
// keeps running on it, raises an alert of its own, and resolves it when
// the source answers again; any other error from Next stops the daemon.
type SourceError struct {
	At  time.Time // when the source tried: the evaluation's time
	Err error
}

func (e *SourceError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *SourceError) Unwrap() error { return e.Err }

// FleetSampler reads many hosts at once: one snapshot per host, every one
// at the time given. PollFleet turns it into a Source.
type FleetSampler interface {
	SampleFleet(ctx context.Context, at time.Time) ([]*Snapshot, error)
	Close() error
}
