package gpu

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// MIG describes a MIG (Multi-Instance GPU) instance: a slice of a GPU with
// memory and compute of its own, that NVML, nvidia-smi and dcgm-exporter
// report beside its parent. A Device with a MIG is an instance; its UUID
// is the instance's own ("MIG-…"), its Index is its parent's, and rules,
// windows and alerts key on it exactly as on a whole GPU. Readings that
// belong to the card (temperature, power, health) stay on the parent.
type MIG struct {
	ParentUUID      string `json:"parent_uuid,omitempty"`
	GPUInstance     int    `json:"gpu_instance"`      // the GPU instance (GI) ID, as nvidia-smi shows it
	ComputeInstance int    `json:"compute_instance"`  // the compute instance (CI) ID within it
	Profile         string `json:"profile,omitempty"` // "1g.10gb", "3g.40gb", …; "" when not said
}

// Label names a GPU or a MIG instance for people: "GPU 0", or "GPU 0 · MIG 3
// (1g.10gb)" for the instance of GPU instance 3 of GPU 0. Everything that
// prints a GPU prints it through Label, so an instance reads the same in
// alerts, /gpu, the page, the digest, charts and status.
func Label(index int, mig *MIG) string {
	var b strings.Builder
	b.WriteString("GPU ")
	b.WriteString(strconv.Itoa(index))
	if mig != nil {
		b.WriteString(" · MIG ")
		b.WriteString(strconv.Itoa(mig.GPUInstance))
		if mig.Profile != "" {
			b.WriteString(" (")
			b.WriteString(mig.Profile)
			b.WriteString(")")
		}
	}
	return b.String()
}

// Label names the device for people, as Label does.
func (d *Device) Label() string { return Label(d.Index, d.MIG) }

// IsInstance reports whether the device is a MIG instance rather than a
// whole GPU.
func (d *Device) IsInstance() bool { return d.MIG != nil }

// ParentUUID returns the UUID of the whole GPU the device belongs to: its
// own for a whole GPU, its parent's for a MIG instance ("" when the source
// does not say).
func (d *Device) ParentUUID() string {
	if d.MIG != nil {
		return d.MIG.ParentUUID
	}
	return d.UUID
}

// InstanceUUID names a MIG instance for a source that reports the
// instance but not its own UUID (dcgm-exporter, nvidia-smi's table): the
// form NVIDIA drivers before R470 gave instances, "MIG-<parent UUID>/<GPU
// instance>/<compute instance>", so the instance keeps one identity
// however often it is read.
func InstanceUUID(parentUUID string, gpuInstance, computeInstance int) string {
	return "MIG-" + parentUUID + "/" + strconv.Itoa(gpuInstance) + "/" + strconv.Itoa(computeInstance)
}

// SortInstances orders devices as every view of a GPU shows them: by
// index, each GPU followed by its MIG instances by GPU instance and
// compute instance. The order of devices that tie (two hosts' GPU 0) is
// kept.
func SortInstances(devices []Device) {
	slices.SortStableFunc(devices, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), CompareInstances(a.MIG, b.MIG))
	})
}

// CompareInstances orders the devices of one GPU: the GPU (nil) before
// its MIG instances, and those by GPU instance and compute instance.
func CompareInstances(a, b *MIG) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmp.Or(cmp.Compare(a.GPUInstance, b.GPUInstance), cmp.Compare(a.ComputeInstance, b.ComputeInstance))
}

// RunsJobs reports whether jobs run on the device itself: a whole GPU or
// a MIG instance. A GPU split into MIG instances runs none of its own;
// counts of GPUs busy, idle or free, hours of use and lists of free GPUs
// count its instances instead.
func (d *Device) RunsJobs() bool { return !d.MIGEnabled }

// ComputeShare is the share of its GPU's compute a MIG instance of
// profile has: its compute slices ("3" of "3g.40gb") of the GPU's (four
// on an A30, seven on the others). 0 when the profile does not say.
func ComputeShare(gpuName, profile string) float64 {
	n, _, ok := strings.Cut(profile, "g.")
	slices, err := strconv.Atoi(n)
	if !ok || err != nil || slices <= 0 {
		return 0
	}
	of := 7.0
	if strings.Contains(gpuName, "A30") {
		of = 4
	}
	return min(float64(slices)/of, 1)
}
