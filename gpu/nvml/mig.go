package nvml

import (
	"errors"
	"math"
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// migGPU is what a Sampler keeps about a GPU in MIG mode: the names of its
// GPU instance profiles, and its MIG instances as the last sample found
// them. The instances are found again at every sample (an administrator
// may split the GPU anew at any time), through their MIG device handles.
type migGPU struct {
	profiles  map[uint32]string    // GPU instance profile ID → "1g.10gb", read once
	instances map[string]*instance // by UUID
	// gpm says the GPU measures each instance's activity (NVML's GPM
	// metrics, Hopper and later); checked once.
	gpm, gpmChecked bool
}

// instance is one MIG instance: a device of its own (its MIG device
// handle, UUID and the readings it does not support), its IDs and
// profile, and the two GPM samples its activity is measured between.
type instance struct {
	device
	gi, ci  int
	profile string
	// gpm holds the last two GPM samples, gpm[cur] the newer; nil when the
	// GPU does not measure instances. have counts the samples taken (up
	// to two): activity needs two.
	gpm  [2]gonvml.GpmSample
	cur  int
	have int
	seen bool // found at the current sample
}

// migMode reads whether GPU d is in MIG mode, remembering a GPU that does
// not support MIG, so that it is not asked again.
func (d *device) migMode(r *reading) bool {
	current, _, ok := get2(r, fieldMIG, d.handle.GetMigMode)
	return ok && current == gonvml.DEVICE_MIG_ENABLE
}

// get2 is get for a call of two results.
func get2[T, U any](r *reading, f field, call func() (T, U, gonvml.Return)) (t T, u U, ok bool) {
	if r.err != nil || !r.d.supports(f) {
		return t, u, false
	}
	t, u, ret := call()
	ok, r.err = r.d.result(r.log, f, ret)
	return t, u, ok
}

// appendInstances reads the MIG instances of parent, a GPU in MIG mode,
// and appends them to out: each with its memory, its processes and, where
// the GPU measures it, its activity; the card's readings stay on the
// parent. It returns gonvml.ERROR_GPU_IS_LOST when the GPU is lost.
func (s *Sampler) appendInstances(parent *device, out []gpu.Device) ([]gpu.Device, error) {
	m := parent.mig
	if m == nil {
		m = &migGPU{profiles: map[uint32]string{}, instances: map[string]*instance{}}
		parent.mig = m
	}
	if !m.gpmChecked {
		m.gpmChecked = true
		m.gpm = s.gpmSupported(parent)
	}
	n, ret := parent.handle.GetMaxMigDeviceCount()
	if ret == gonvml.ERROR_GPU_IS_LOST {
		return out, ret
	}
	if ret != gonvml.SUCCESS {
		s.warnOnce(parent, fieldMIGDevices, ret)
		return out, nil
	}
	for _, inst := range m.instances {
		inst.seen = false
	}
	first := len(out)
	for i := range n {
		h, ret := parent.handle.GetMigDeviceHandleByIndex(i)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_FOUND, gonvml.ERROR_INVALID_ARGUMENT:
			continue // no instance in this slot
		case gonvml.ERROR_GPU_IS_LOST:
			return out, ret
		default:
			s.warnOnce(parent, fieldMIGDevices, ret)
			continue
		}
		inst, err := s.instance(parent, h)
		if err != nil {
			if errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
				return out, err
			}
			s.log.Warn("MIG instance not readable; leaving it out of this sample", "gpu", parent.index, "uuid", parent.uuid, "slot", i, "err", err)
			continue
		}
		out = append(out, gpu.Device{})
		if err := s.readInstance(parent, inst, &out[len(out)-1]); err != nil {
			if errors.Is(err, gonvml.ERROR_GPU_IS_LOST) {
				return out[:first], err
			}
			out = out[:len(out)-1]
		}
	}
	for uuid, inst := range m.instances {
		if !inst.seen {
			s.freeGPM(inst)
			delete(m.instances, uuid)
		}
	}
	gpu.SortInstances(out[first:])
	return out, nil
}

// instance returns the instance of MIG device handle h, loading its UUID,
// IDs and profile when it is new.
func (s *Sampler) instance(parent *device, h gonvml.Device) (*instance, error) {
	uuid, ret := h.GetUUID()
	if ret != gonvml.SUCCESS {
		return nil, callError("reading MIG instance UUID", ret)
	}
	m := parent.mig
	inst := m.instances[uuid]
	if inst == nil {
		gi, ret := h.GetGpuInstanceId()
		if ret != gonvml.SUCCESS {
			return nil, callError("reading MIG GPU instance ID", ret)
		}
		ci, ret := h.GetComputeInstanceId()
		if ret != gonvml.SUCCESS {
			return nil, callError("reading MIG compute instance ID", ret)
		}
		inst = &instance{device: device{index: parent.index, ready: true, uuid: uuid, name: parent.name}, gi: gi, ci: ci}
		inst.profile = s.profile(parent, gi)
		if m.gpm {
			s.allocGPM(parent, inst)
		}
		m.instances[uuid] = inst
	}
	inst.handle, inst.seen = h, true
	return inst, nil
}

// readInstance fills out with one reading of MIG instance inst of parent.
func (s *Sampler) readInstance(parent *device, inst *instance, out *gpu.Device) error {
	nan := math.NaN()
	*out = gpu.Device{
		Index: parent.index, UUID: inst.uuid, Name: parent.name,
		MIG:     &gpu.MIG{ParentUUID: parent.uuid, GPUInstance: inst.gi, ComputeInstance: inst.ci, Profile: inst.profile},
		UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan,
	}
	r := &reading{d: &inst.device, log: s.log}
	inst.readMemory(r, out)
	out.Processes = inst.readProcesses(r)
	if r.err != nil {
		return r.err
	}
	if s.attr != nil {
		for i := range out.Processes {
			s.attr.Attribute(&out.Processes[i])
		}
	}
	if parent.mig.gpm {
		out.UtilGPU, out.UtilMem = s.activity(parent, inst)
	}
	return nil
}

// profile names the profile of GPU instance gi of parent ("1g.10gb"), or
// "" when NVML does not say.
func (s *Sampler) profile(parent *device, gi int) string {
	g, ret := parent.handle.GetGpuInstanceById(gi)
	if ret != gonvml.SUCCESS {
		s.log.Debug("cannot read a MIG GPU instance; its profile stays unnamed", "gpu", parent.index, "gpu_instance", gi, "err", ret.Error())
		return ""
	}
	info, ret := g.GetInfo()
	if ret != gonvml.SUCCESS {
		return ""
	}
	m := parent.mig
	if name, ok := m.profiles[info.ProfileId]; ok {
		return name
	}
	name := ""
	// The profile ID is not the profile's index: find the index whose
	// profile has the ID, as nvidia-smi does.
	for i := range gonvml.GPU_INSTANCE_PROFILE_COUNT {
		p, ret := parent.handle.GetGpuInstanceProfileInfo(i)
		if ret == gonvml.SUCCESS && p.Id == info.ProfileId {
			name = profileName(i, p)
			break
		}
	}
	m.profiles[info.ProfileId] = name
	return name
}

// profileName names a GPU instance profile as nvidia-smi does: its compute
// slices and its memory in GB, to the nearest ("1g.10gb" for 9856 MB,
// "3g.40gb" for 40192, "7g.80gb" for 80384), with the variant of profile
// index i ("1g.10gb+me", media extensions). Drivers name profiles
// themselves only in a version of the profile call go-nvml's mock cannot
// answer; these are the names they give.
func profileName(i int, p gonvml.GpuInstanceProfileInfo) string {
	gb := max((p.MemorySizeMB+500)/1000, 1)
	name := strconv.FormatUint(uint64(p.SliceCount), 10) + "g." + strconv.FormatUint(gb, 10) + "gb"
	switch i {
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1:
		name += "+me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX:
		name += "+gfx"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
		name += "-me"
	case gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
		name += "+me.all"
	}
	return name
}

// gpmSupported reports whether parent measures its MIG instances'
// activity: GPM, on Hopper and later. A library without GPM (a driver
// before R520) is not asked, for calling a missing symbol aborts.
func (s *Sampler) gpmSupported(parent *device) bool {
	if s.lib.Extensions().LookupSymbol("nvmlGpmQueryDeviceSupport") != nil {
		return false
	}
	support, ret := parent.handle.GpmQueryDeviceSupport()
	ok := ret == gonvml.SUCCESS && support.IsSupportedDevice != 0
	if !ok {
		s.log.Info("GPU in MIG mode does not measure its instances' activity (GPM needs Hopper or later); their utilization is unknown",
			"gpu", parent.index, "uuid", parent.uuid)
	}
	return ok
}

// allocGPM allocates the two GPM samples of inst; without them its
// activity stays unknown.
func (s *Sampler) allocGPM(parent *device, inst *instance) {
	for k := range inst.gpm {
		sample, ret := s.lib.GpmSampleAlloc()
		if ret != gonvml.SUCCESS {
			s.log.Warn("cannot allocate a GPM sample; the MIG instance's utilization stays unknown", "gpu", parent.index, "uuid", inst.uuid, "err", ret.Error())
			s.freeGPM(inst)
			return
		}
		inst.gpm[k] = sample
	}
}

// freeGPM frees inst's GPM samples.
func (s *Sampler) freeGPM(inst *instance) {
	for k, sample := range inst.gpm {
		if sample != nil {
			if ret := s.lib.GpmSampleFree(sample); ret != gonvml.SUCCESS {
				s.log.Debug("freeing a GPM sample failed", "uuid", inst.uuid, "err", ret.Error())
			}
			inst.gpm[k] = nil
		}
	}
}

// activity takes a GPM sample of inst and returns its graphics engine
// activity and its DRAM bandwidth use, in percent, over the time since the
// sample before; NaN until there are two samples, or when NVML does not
// answer.
func (s *Sampler) activity(parent *device, inst *instance) (engine, dram float64) {
	engine, dram = math.NaN(), math.NaN()
	if inst.gpm[0] == nil {
		return engine, dram
	}
	next := 1 - inst.cur
	if ret := parent.handle.GpmMigSampleGet(inst.gi, inst.gpm[next]); ret != gonvml.SUCCESS {
		s.warnOnce(&inst.device, fieldGPM, ret)
		inst.have = 0
		return engine, dram
	}
	prev := inst.cur
	inst.cur = next
	if inst.have < 2 {
		inst.have++
	}
	if inst.have < 2 {
		return engine, dram
	}
	get := &gonvml.GpmMetricsGetType{NumMetrics: 2, Sample1: inst.gpm[prev], Sample2: inst.gpm[next]}
	get.Metrics[0].MetricId = uint32(gonvml.GPM_METRIC_GRAPHICS_UTIL)
	get.Metrics[1].MetricId = uint32(gonvml.GPM_METRIC_DRAM_BW_UTIL)
	if ret := s.lib.GpmMetricsGet(get); ret != gonvml.SUCCESS {
		s.warnOnce(&inst.device, fieldGPM, ret)
		return engine, dram
	}
	return gpmPercent(get.Metrics[0]), gpmPercent(get.Metrics[1])
}

// gpmPercent is a GPM metric's value as a percent, NaN when NVML could not
// compute it.
func gpmPercent(m gonvml.GpmMetric) float64 {
	if gonvml.Return(m.NvmlReturn) != gonvml.SUCCESS || math.IsNaN(m.Value) {
		return math.NaN()
	}
	return math.Round(min(max(m.Value, 0), 100)*10) / 10
}

// warnOnce logs a failed call of d once.
func (s *Sampler) warnOnce(d *device, f field, ret gonvml.Return) {
	if d.warned&f != 0 {
		return
	}
	d.warned |= f
	s.log.Warn("GPU reading failed; reporting it as unknown", "gpu", d.index, "uuid", d.uuid, "call", f.String(), "err", ret.Error())
}

// closeMIG frees what the MIG instances of d hold.
func (s *Sampler) closeMIG(d *device) {
	if d.mig == nil {
		return
	}
	for _, inst := range d.mig.instances {
		s.freeGPM(inst)
	}
}
