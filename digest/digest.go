// Package digest turns every snapshot into hourly usage rollups — per GPU
// and per user — and, on a cron schedule, into a digest people read in 20
// seconds: how each GPU was used, by whom, where GPUs sat held but idle,
// which alerts fired, and what the energy cost.
//
// Rollups are updated in O(1) per GPU per sample and persisted by the
// daemon; a digest is built from the rollups of its window and rendered as
// plain text, markdown and Slack Block Kit.
package digest

import (
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// GPUHour is one GPU's usage in one clock hour (UTC).
type GPUHour struct {
	Hour time.Time `json:"hour"` // the start of the hour, UTC
	GPU  int       `json:"gpu"`
	UUID string    `json:"uuid"` // the GPU's, or the MIG instance's
	Name string    `json:"name"`
	Host string    `json:"host"`
	// MIG is the MIG instance the hour is of, nil for a whole GPU;
	// MIGEnabled marks a GPU split into instances, whose hours are its
	// instances' (its own keep its temperature and energy).
	MIG        *gpu.MIG `json:"mig,omitempty"`
	MIGEnabled bool     `json:"mig_enabled,omitempty"`
	Samples    int      `json:"samples"`
	// Seconds is the time the samples cover (between consecutive samples,
	// gaps over a few intervals not bridged).
	Seconds float64 `json:"seconds"`
	// UtilSeconds integrates utilization (0–1) over time: average
	// utilization is UtilSeconds/Seconds.
	UtilSeconds float64 `json:"util_seconds"`
	UtilMax     float64 `json:"util_max"` // percent
	MemMax      uint64  `json:"mem_max_bytes"`
	MemTotal    uint64  `json:"mem_total_bytes"`
	// BusySeconds: utilization at or above BusyPercent.
	BusySeconds float64 `json:"busy_seconds"`
	// IdleHeldSeconds: memory held (at least HeldBytes above the GPU's
	// resting level, gpu.RestingLevel) while utilization was below
	// BusyPercent, and had been for IdleWindow: a service answering a
	// request now and then is not idle.
	IdleHeldSeconds float64 `json:"idle_held_seconds"`
	// HeldSeconds is the time memory was held (as for IdleHeldSeconds), and
	// HeldUtilSeconds integrates utilization (0–1) over it: how well a job
	// used the GPU it held.
	HeldSeconds     float64 `json:"held_seconds,omitempty"`
	HeldUtilSeconds float64 `json:"held_util_seconds,omitempty"`
	TempMax         float64 `json:"temp_max_c"`
	// EnergyJoules integrates power over time (trapezoids).
	EnergyJoules float64 `json:"energy_joules"`
	// UtilMissing and MemMissing count the samples without a utilization
	// or without memory used (a log that does not record them; a MIG
	// instance of a GPU that measures none), and UtilMissingSeconds the
	// time they cover: what is not logged is not averaged as 0.
	UtilMissing        int     `json:"util_missing,omitempty"`
	UtilMissingSeconds float64 `json:"util_missing_seconds,omitempty"`
	MemMissing         int     `json:"mem_missing,omitempty"`
}

// UserHour is one user's use of one GPU in one clock hour.
type UserHour struct {
	Hour time.Time `json:"hour"`
	User string    `json:"user"`
	GPU  int       `json:"gpu"`
	UUID string    `json:"uuid"`
	MIG  *gpu.MIG  `json:"mig,omitempty"`  // the MIG instance used, nil for a whole GPU
	Host string    `json:"host,omitempty"` // the GPU's host; records before fleets have none
	// GPUSeconds is the time the user held the GPU, shared between the
	// users on it by their share of its process memory.
	GPUSeconds float64 `json:"gpu_seconds"`
	// ByteSeconds integrates the user's GPU memory over time: GiB-hours is
	// ByteSeconds / 2^30 / 3600.
	ByteSeconds float64 `json:"byte_seconds"`
	// IdleHeldSeconds is the time the user held at least HeldBytes on the
	// GPU while it was idle; IdleHeldMax the most memory held then.
	IdleHeldSeconds float64 `json:"idle_held_seconds"`
	IdleHeldMax     uint64  `json:"idle_held_max_bytes"`
	// Command is the command line of the user's largest process on the GPU
	// at the hour's last sample: the job, for people.
	Command string `json:"command,omitempty"`
	// Job is the Slurm job of that process ("slurm:4242"); "" outside a
	// job.
	Job string `json:"job,omitempty"`
	// HeldSeconds is the time the user had processes on the GPU, and
	// HeldUtilSeconds integrates the GPU's utilization (0–1) over it: how
	// well the user's jobs used the GPU they held. MemMax is the most GPU
	// memory the user's processes held at once.
	HeldSeconds     float64 `json:"held_seconds,omitempty"`
	HeldUtilSeconds float64 `json:"held_util_seconds,omitempty"`
	MemMax          uint64  `json:"mem_max_bytes,omitempty"`
}

// AlertHour counts one rule's alerts that fired in one clock hour.
type AlertHour struct {
	Hour  time.Time `json:"hour"`
	Alert string    `json:"alert"`
	Fired int       `json:"fired"`
	// LongestSeconds is the longest of those alerts, from firing to
	// resolving (or to the end of the data while still firing).
	LongestSeconds float64 `json:"longest_seconds"`
}

// Thresholds of "busy", "held but idle" and "held at low utilization".
const (
	BusyPercent = 5       // utilization at or above this is busy
	HeldBytes   = 1 << 30 // memory at or above this, above the GPU's resting level, is held
	// IdleWindow is how long a GPU must compute nothing (no sample at
	// BusyPercent or more) for its held time to count as idle, as
	// GPUIdleButHeld's max(utilization.gpu, 5m) < 5 does.
	IdleWindow = 5 * time.Minute
	// LowUtilPercent: a GPU held busy for an hour at an average below this
	// is underused — its job is starved by its input pipeline, or too
	// small for the GPU.
	LowUtilPercent = 30
)
