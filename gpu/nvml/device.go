package nvml

import (
	"log/slog"
	"math"
	"slices"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// field names one NVML reading, as a bit in a device's masks.
type field uint16

const (
	fieldMemV2 field = 1 << iota
	fieldMemV1
	fieldUtil
	fieldTemp
	fieldPower
	fieldLimitEnforced
	fieldLimitManagement
	fieldCompute
	fieldGraphics
	fieldMIG        // GetMigMode
	fieldMIGDevices // GetMaxMigDeviceCount, GetMigDeviceHandleByIndex
	fieldGPM        // GpmMigSampleGet, GpmMetricsGet
)

// String names the NVML call behind the field, for logs.
func (f field) String() string {
	switch f {
	case fieldMemV2:
		return "GetMemoryInfo_v2"
	case fieldMemV1:
		return "GetMemoryInfo"
	case fieldUtil:
		return "GetUtilizationRates"
	case fieldTemp:
		return "GetTemperature"
	case fieldPower:
		return "GetPowerUsage"
	case fieldLimitEnforced:
		return "GetEnforcedPowerLimit"
	case fieldLimitManagement:
		return "GetPowerManagementLimit"
	case fieldCompute:
		return "GetComputeRunningProcesses"
	case fieldGraphics:
		return "GetGraphicsRunningProcesses"
	case fieldMIG:
		return "GetMigMode"
	case fieldMIGDevices:
		return "GetMigDeviceHandleByIndex"
	case fieldGPM:
		return "GpmMetricsGet"
	}
	return "unknown"
}

// device is what a Sampler keeps about one GPU between samples.
type device struct {
	index  int
	ready  bool // handle, uuid and name are loaded
	handle gonvml.Device
	uuid   string
	name   string
	lost   bool // ERROR_GPU_IS_LOST seen and reported; cleared when it answers again
	// mig is set while the GPU is in MIG mode: its instances.
	mig *migGPU

	// unsupported holds the calls this GPU answered ERROR_NOT_SUPPORTED:
	// they are not made again. warned holds the calls whose other failures
	// were logged, so a broken reading logs once, not every sample.
	unsupported field
	warned      field

	// health is how the GPU's health is read; nil until it is loaded.
	health *deviceHealth
}

// result sorts the answer of one call: true when the value can be used,
// gonvml.ERROR_GPU_IS_LOST when the GPU is gone. Other failures leave the
// reading NaN; ERROR_NOT_SUPPORTED also stops the call being made again.
func (d *device) result(log *slog.Logger, f field, ret gonvml.Return) (bool, error) {
	switch ret {
	case gonvml.SUCCESS:
		return true, nil
	case gonvml.ERROR_GPU_IS_LOST:
		return false, gonvml.ERROR_GPU_IS_LOST
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		d.unsupported |= f
		return false, nil
	}
	if d.warned&f == 0 {
		d.warned |= f
		log.Warn("GPU reading failed; reporting it as unknown", "gpu", d.index, "uuid", d.uuid, "call", f.String(), "err", ret.Error())
	}
	return false, nil
}

// supports reports whether the call behind f is still worth making.
func (d *device) supports(f field) bool { return d.unsupported&f == 0 }

// reading is one pass over a device's calls. Its error is sticky: once a
// call says the GPU is lost, the calls after it are not made.
type reading struct {
	d   *device
	log *slog.Logger
	err error
}

// get makes the call behind f, unless the GPU said it does not support it
// or is lost. ok is true when the value can be used.
func get[T any](r *reading, f field, call func() (T, gonvml.Return)) (v T, ok bool) {
	if r.err != nil || !r.d.supports(f) {
		return v, false
	}
	v, ret := call()
	ok, r.err = r.d.result(r.log, f, ret)
	return v, ok
}

// read fills out with one reading of every metric. It returns
// gonvml.ERROR_GPU_IS_LOST as soon as any call says the GPU is lost. A GPU
// in MIG mode (MIGEnabled) keeps the card's readings (temperature, power);
// its memory, utilization and processes are its instances', which the
// caller reads (appendInstances).
func (d *device) read(log *slog.Logger, attr Attributor, out *gpu.Device) error {
	*out = gpu.Device{
		Index:       d.index,
		UUID:        d.uuid,
		Name:        d.name,
		UtilGPU:     math.NaN(),
		UtilMem:     math.NaN(),
		TempC:       math.NaN(),
		PowerW:      math.NaN(),
		PowerLimitW: math.NaN(),
	}
	r := &reading{d: d, log: log}
	out.MIGEnabled = d.migMode(r)
	if !out.MIGEnabled {
		d.readMemory(r, out)
		if u, ok := get(r, fieldUtil, d.handle.GetUtilizationRates); ok {
			out.UtilGPU, out.UtilMem = float64(u.Gpu), float64(u.Memory)
		}
	}
	if t, ok := get(r, fieldTemp, d.temperature); ok {
		out.TempC = float64(t)
	}
	if mw, ok := get(r, fieldPower, d.handle.GetPowerUsage); ok {
		out.PowerW = milliwatts(mw)
	}
	// The enforced limit is the lowest of all limits in force; the power
	// management limit is the one most GPUs without it still report.
	if mw, ok := get(r, fieldLimitEnforced, d.handle.GetEnforcedPowerLimit); ok {
		out.PowerLimitW = milliwatts(mw)
	} else if mw, ok := get(r, fieldLimitManagement, d.handle.GetPowerManagementLimit); ok {
		out.PowerLimitW = milliwatts(mw)
	}
	d.readHealth(r, &out.Health)
	var procs []gpu.Process
	if !out.MIGEnabled {
		procs = d.readProcesses(r)
	}
	if r.err != nil {
		return r.err
	}
	if attr != nil {
		for i := range procs {
			attr.Attribute(&procs[i])
		}
	}
	out.Processes = procs
	return nil
}

// readProcesses reads the processes that hold the device's memory. A
// process that is both compute and graphics is listed by both calls.
func (d *device) readProcesses(r *reading) []gpu.Process {
	var procs []gpu.Process
	if infos, ok := get(r, fieldCompute, d.handle.GetComputeRunningProcesses); ok {
		procs = mergeProcesses(procs, infos)
	}
	if infos, ok := get(r, fieldGraphics, d.handle.GetGraphicsRunningProcesses); ok {
		procs = mergeProcesses(procs, infos)
	}
	return procs
}

// temperature reads the GPU die's temperature.
func (d *device) temperature() (uint32, gonvml.Return) {
	return d.handle.GetTemperature(gonvml.TEMPERATURE_GPU)
}

// readMemory prefers GetMemoryInfo_v2, whose Used leaves out the memory the
// driver reserves and which says how much that is, and falls back to
// GetMemoryInfo for good when a GPU does not support v2 (its Used counts
// the reserved memory, so the GPU is full at its total). Unknown memory
// leaves MemTotal 0.
func (d *device) readMemory(r *reading, out *gpu.Device) {
	if d.supports(fieldMemV2) {
		m, ret := d.handle.GetMemoryInfo_v2()
		switch ret {
		case gonvml.SUCCESS:
			out.MemUsed, out.MemTotal, out.MemReserved = m.Used, m.Total, reserved(m)
			return
		case gonvml.ERROR_GPU_IS_LOST:
			r.err = gonvml.ERROR_GPU_IS_LOST
			return
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND, gonvml.ERROR_ARGUMENT_VERSION_MISMATCH:
			d.unsupported |= fieldMemV2
			r.log.Debug("GetMemoryInfo_v2 not supported; using GetMemoryInfo", "gpu", d.index, "uuid", d.uuid, "err", ret.Error())
		}
		// Any other failure of v2: try v1 for this sample only.
	}
	if m, ok := get(r, fieldMemV1, d.handle.GetMemoryInfo); ok {
		out.MemUsed, out.MemTotal = m.Used, m.Total
	}
}

// reserved is the memory the driver keeps, as memory info v2 reports it:
// its Reserved field, or what Used and Free leave of Total when a driver
// does not fill that field in.
func reserved(m gonvml.Memory_v2) uint64 {
	switch {
	case m.Reserved > 0:
		return min(m.Reserved, m.Total)
	case m.Free > 0 && m.Used+m.Free < m.Total:
		return m.Total - m.Used - m.Free
	}
	return 0
}

// valueNotAvailable is NVML_VALUE_NOT_AVAILABLE, the memory NVML reports for
// a process when it cannot tell (Windows WDDM, some containers).
const valueNotAvailable = math.MaxUint64

// mergeProcesses adds infos to procs, keeping one entry per PID and the
// larger memory when a PID comes twice.
func mergeProcesses(procs []gpu.Process, infos []gonvml.ProcessInfo) []gpu.Process {
	procs = slices.Grow(procs, len(infos))
next:
	for _, info := range infos {
		mem := info.UsedGpuMemory
		if mem == valueNotAvailable {
			mem = 0
		}
		pid := int(info.Pid)
		for i := range procs {
			if procs[i].PID == pid {
				procs[i].MemUsed = max(procs[i].MemUsed, mem)
				continue next
			}
		}
		procs = append(procs, gpu.Process{PID: pid, MemUsed: mem})
	}
	return procs
}

// milliwatts converts NVML's milliwatts to watts.
func milliwatts(mw uint32) float64 { return float64(mw) / 1000 }
