package nvml

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// profileIDs are the GPU instance profile IDs an A100 80GB and an H100
// 80GB give their profiles (`nvidia-smi mig -lgip`), by profile index:
// not the indices, which is why a sampler must map one to the other.
var profileIDs = map[int]uint32{
	gonvml.GPU_INSTANCE_PROFILE_1_SLICE: 19, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: 20,
	gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: 15, gonvml.GPU_INSTANCE_PROFILE_2_SLICE: 14,
	gonvml.GPU_INSTANCE_PROFILE_3_SLICE: 9, gonvml.GPU_INSTANCE_PROFILE_4_SLICE: 5, gonvml.GPU_INSTANCE_PROFILE_7_SLICE: 0,
}

// fakeInstance is one MIG instance of a fakeMIG GPU.
type fakeInstance struct {
	gi, ci       int
	profileIndex int // gonvml.GPU_INSTANCE_PROFILE_…
	uuid         string
	mem          gonvml.Memory
	procs        []gonvml.ProcessInfo
	// activity and dram are what GPM measures between two samples, in
	// percent.
	activity, dram float64
}

// fakeMIG makes g a GPU in MIG mode, split into instances, with the MIG
// profiles of config (go-nvml's mock of that GPU) and, with gpm, GPM
// metrics per instance. Change instances between samples to split the GPU
// anew.
type fakeMIG struct {
	g         *fakeGPU
	config    gpus.Config
	instances []*fakeInstance // by slot: a nil slot has no instance
	gpm       bool
	// memoryMB replaces the memory of the mock's profiles, by profile
	// index: its H100 profiles have a round 10 GiB a memory slice, a real
	// H100's less.
	memoryMB map[int]uint64
	samples  map[*mock.GpmSample]int // the GPU instance each GPM sample last read
	allocs   int
	frees    int
}

// enable makes the fake host's GPU i the MIG GPU m describes.
func (m *fakeMIG) enable(h *fakeHost, i int) {
	m.g = h.gpus[i]
	m.g.migMode = gonvml.DEVICE_MIG_ENABLE
	m.samples = map[*mock.GpmSample]int{}
	d := h.devices[i]
	d.GetMaxMigDeviceCountFunc = func() (int, gonvml.Return) { return 7, m.g.answer(gonvml.SUCCESS) }
	d.GetMigDeviceHandleByIndexFunc = func(slot int) (gonvml.Device, gonvml.Return) {
		if ret := m.g.answer(gonvml.SUCCESS); ret != gonvml.SUCCESS {
			return nil, ret
		}
		if slot >= len(m.instances) || m.instances[slot] == nil {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return m.instances[slot].device(m.g), gonvml.SUCCESS
	}
	d.GetGpuInstanceByIdFunc = func(id int) (gonvml.GpuInstance, gonvml.Return) {
		for _, in := range m.instances {
			if in != nil && in.gi == id {
				info := gonvml.GpuInstanceInfo{Device: d, Id: uint32(id), ProfileId: profileIDs[in.profileIndex]}
				return &mock.GpuInstance{GetInfoFunc: func() (gonvml.GpuInstanceInfo, gonvml.Return) { return info, gonvml.SUCCESS }}, gonvml.SUCCESS
			}
		}
		return nil, gonvml.ERROR_NOT_FOUND
	}
	d.GetGpuInstanceProfileInfoFunc = func(index int) (gonvml.GpuInstanceProfileInfo, gonvml.Return) {
		p, ok := m.config.MIGProfiles.GpuInstanceProfiles[index]
		if !ok {
			return p, gonvml.ERROR_NOT_SUPPORTED
		}
		p.Id = profileIDs[index]
		if mb, ok := m.memoryMB[index]; ok {
			p.MemorySizeMB = mb
		}
		return p, gonvml.SUCCESS
	}
	d.GpmQueryDeviceSupportFunc = func() (gonvml.GpmSupport, gonvml.Return) {
		if !m.gpm {
			return gonvml.GpmSupport{}, gonvml.SUCCESS
		}
		return gonvml.GpmSupport{IsSupportedDevice: 1}, gonvml.SUCCESS
	}
	d.GpmMigSampleGetFunc = func(gi int, s gonvml.GpmSample) gonvml.Return {
		m.samples[s.(*mock.GpmSample)] = gi
		return m.g.answer(gonvml.SUCCESS)
	}
	h.lib.GpmSampleAllocFunc = func() (gonvml.GpmSample, gonvml.Return) {
		m.allocs++
		return &mock.GpmSample{}, gonvml.SUCCESS
	}
	h.lib.GpmSampleFreeFunc = func(gonvml.GpmSample) gonvml.Return {
		m.frees++
		return gonvml.SUCCESS
	}
	h.lib.GpmMetricsGetFunc = func(get *gonvml.GpmMetricsGetType) gonvml.Return {
		gi := m.samples[get.Sample2.(*mock.GpmSample)]
		for _, in := range m.instances {
			if in == nil || in.gi != gi {
				continue
			}
			for k := range get.NumMetrics {
				switch gonvml.GpmMetricId(get.Metrics[k].MetricId) {
				case gonvml.GPM_METRIC_GRAPHICS_UTIL:
					get.Metrics[k].Value = in.activity
				case gonvml.GPM_METRIC_DRAM_BW_UTIL:
					get.Metrics[k].Value = in.dram
				default:
					get.Metrics[k].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
				}
			}
			return gonvml.SUCCESS
		}
		return gonvml.ERROR_INVALID_ARGUMENT
	}
}

// device is the MIG device handle of the instance: memory info v1 only
// and no graphics processes, as NVML answers for an instance.
func (in *fakeInstance) device(parent *fakeGPU) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:              func() (string, gonvml.Return) { return in.uuid, parent.answer(gonvml.SUCCESS) },
		GetGpuInstanceIdFunc:     func() (int, gonvml.Return) { return in.gi, parent.answer(gonvml.SUCCESS) },
		GetComputeInstanceIdFunc: func() (int, gonvml.Return) { return in.ci, parent.answer(gonvml.SUCCESS) },
		GetMemoryInfo_v2Func: func() (gonvml.Memory_v2, gonvml.Return) {
			return gonvml.Memory_v2{}, parent.answer(gonvml.ERROR_NOT_SUPPORTED)
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) { return in.mem, parent.answer(gonvml.SUCCESS) },
		GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return in.procs, parent.answer(gonvml.SUCCESS)
		},
		GetGraphicsRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return nil, parent.answer(gonvml.ERROR_NOT_SUPPORTED)
		},
	}
}

// sevenSlices is an A100 80GB in seven 1g.10gb instances (GPU instances
// 7–13, as `nvidia-smi mig -cgi 19,19,19,19,19,19,19 -C` makes them), a
// process of 1–7 GiB on each.
func sevenSlices() (*fakeGPU, *fakeMIG) {
	g := &fakeGPU{uuid: "GPU-a100", name: "NVIDIA A100-SXM4-80GB", temp: 48, powerMW: 180000, limitMW: 400000,
		mem: gonvml.Memory{Total: 80 * gib, Used: 30 * gib}, util: gonvml.Utilization{Gpu: 99},
		compute: []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: gib}}}
	m := &fakeMIG{config: gpus.A100_SXM4_80GB}
	for k := range 7 {
		used := uint64(k+1) * gib
		m.instances = append(m.instances, &fakeInstance{
			gi: 7 + k, ci: 0, profileIndex: gonvml.GPU_INSTANCE_PROFILE_1_SLICE,
			uuid:  "MIG-0000000" + string(rune('a'+k)),
			mem:   gonvml.Memory{Total: 9728 << 20, Used: used, Free: 9728<<20 - used},
			procs: []gonvml.ProcessInfo{{Pid: uint32(5000 + k), UsedGpuMemory: used, GpuInstanceId: uint32(7 + k)}},
		})
	}
	return g, m
}

func TestSampleMIGInstances(t *testing.T) {
	g, m := sevenSlices()
	other := &fakeGPU{uuid: "GPU-whole", name: "NVIDIA A100-SXM4-80GB", mem: gonvml.Memory{Total: 80 * gib, Used: 10 * gib},
		util: gonvml.Utilization{Gpu: 50, Memory: 20}, temp: 40, powerMW: 100000, limitMW: 400000}
	h := newFakeHost(g, other)
	m.enable(h, 0)
	attr := fakeAttributor{}
	for k := range 7 {
		attr[5000+k] = gpu.Process{User: "user" + string(rune('a'+k)), Command: "python train.py"}
	}
	s := h.open(t, Options{Host: "dgx", Attributor: attr})
	snap, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Devices) != 9 {
		t.Fatalf("got %d devices, want the parent, its 7 instances and the whole GPU", len(snap.Devices))
	}
	parent := snap.Devices[0]
	nan := math.NaN()
	want := gpu.Device{Index: 0, UUID: "GPU-a100", Name: "NVIDIA A100-SXM4-80GB", MIGEnabled: true,
		UtilGPU: nan, UtilMem: nan, TempC: 48, PowerW: 180, PowerLimitW: 400}
	if d := diffDevice(parent, want); d != "" {
		t.Errorf("parent: %s", d)
	}
	for k := range 7 {
		used := uint64(k+1) * gib
		want := gpu.Device{Index: 0, UUID: "MIG-0000000" + string(rune('a'+k)), Name: "NVIDIA A100-SXM4-80GB",
			MIG:     &gpu.MIG{ParentUUID: "GPU-a100", GPUInstance: 7 + k, Profile: "1g.10gb"},
			MemUsed: used, MemTotal: 9728 << 20,
			UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan,
			Processes: []gpu.Process{{PID: 5000 + k, User: "user" + string(rune('a'+k)), Command: "python train.py", MemUsed: used}},
		}
		if d := diffDevice(snap.Devices[1+k], want); d != "" {
			t.Errorf("instance %d: %s", k, d)
		}
	}
	if got := snap.Devices[8]; got.UUID != "GPU-whole" || got.MIGEnabled || got.MIG != nil || got.UtilGPU != 50 {
		t.Errorf("whole GPU: got %+v, want it read as before", got)
	}
	// A GPU in MIG mode is not asked for what its instances answer.
	calls := callsMade(h.devices[0])
	for _, call := range []string{"GetMemoryInfo_v2", "GetMemoryInfo", "GetUtilizationRates", "GetComputeRunningProcesses"} {
		if calls[call] > 0 {
			t.Errorf("parent in MIG mode: %s called %d times, want none", call, calls[call])
		}
	}
	for _, call := range []string{"GetMigMode", "GetMaxMigDeviceCount", "GetMigDeviceHandleByIndex"} {
		if callsMade(h.devices[1])[call] > 1 || call != "GetMigMode" && callsMade(h.devices[1])[call] > 0 {
			t.Errorf("whole GPU: %s called %d times", call, callsMade(h.devices[1])[call])
		}
	}
	profileCalls := calls["GetGpuInstanceProfileInfo"]
	if _, err := s.Sample(context.Background(), t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := callsMade(h.devices[0])["GetGpuInstanceProfileInfo"]; got != profileCalls || profileCalls == 0 {
		t.Errorf("profile names read %d times over two samples, %d in the first: want them read once", got, profileCalls)
	}
}

func TestSampleMIGProfiles(t *testing.T) {
	for _, tc := range []struct {
		config gpus.Config
		index  int
		want   string
	}{
		{gpus.A100_SXM4_80GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.10gb"},
		{gpus.A100_SXM4_80GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, "1g.10gb+me"},
		{gpus.A100_SXM4_80GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, "1g.20gb"},
		{gpus.A100_SXM4_80GB, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, "3g.40gb"},
		{gpus.A100_SXM4_80GB, gonvml.GPU_INSTANCE_PROFILE_7_SLICE, "7g.80gb"},
		{gpus.A100_SXM4_40GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.5gb"},
		{gpus.H100_SXM5_80GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE, "1g.10gb"},
		{gpus.H100_SXM5_80GB, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, "1g.20gb"},
		{gpus.H100_SXM5_80GB, gonvml.GPU_INSTANCE_PROFILE_3_SLICE, "3g.40gb"},
		{gpus.H100_SXM5_80GB, gonvml.GPU_INSTANCE_PROFILE_4_SLICE, "4g.40gb"},
	} {
		p := tc.config.MIGProfiles.GpuInstanceProfiles[tc.index]
		if mb, ok := h100MemoryMB[tc.index]; ok && tc.config.Name == gpus.H100_SXM5_80GB.Name {
			p.MemorySizeMB = mb
		}
		if got := profileName(tc.index, p); got != tc.want {
			t.Errorf("%s profile %d (%d MB): got %q, want %q", tc.config.Name, tc.index, p.MemorySizeMB, got, tc.want)
		}
	}
}

// h100MemoryMB is the memory of a real H100 80GB's profiles (`nvidia-smi
// mig -lgip`: 9.75, 19.62 and 39.50 GiB).
var h100MemoryMB = map[int]uint64{
	gonvml.GPU_INSTANCE_PROFILE_1_SLICE: 9984, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: 20096,
	gonvml.GPU_INSTANCE_PROFILE_3_SLICE: 40448, gonvml.GPU_INSTANCE_PROFILE_4_SLICE: 40448,
}

func TestSampleMIGActivity(t *testing.T) {
	g := &fakeGPU{uuid: "GPU-h100", name: "NVIDIA H100 80GB HBM3", temp: 55, powerMW: 300000, limitMW: 700000}
	m := &fakeMIG{config: gpus.H100_SXM5_80GB, gpm: true, memoryMB: h100MemoryMB, instances: []*fakeInstance{
		{gi: 1, profileIndex: gonvml.GPU_INSTANCE_PROFILE_4_SLICE, uuid: "MIG-big", mem: gonvml.Memory{Total: 40 * gib, Used: 20 * gib},
			procs: []gonvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 20 * gib}}, activity: 0.4, dram: 0},
		{gi: 2, profileIndex: gonvml.GPU_INSTANCE_PROFILE_3_SLICE, uuid: "MIG-small", mem: gonvml.Memory{Total: 40 * gib, Used: 30 * gib},
			procs: []gonvml.ProcessInfo{{Pid: 20, UsedGpuMemory: 30 * gib}}, activity: 93.27, dram: 41},
	}}
	h := newFakeHost(g)
	m.enable(h, 0)
	s := h.open(t, Options{})
	first, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range first.Devices[1:] {
		if !math.IsNaN(d.UtilGPU) {
			t.Errorf("%s at the first sample: utilization %v, want unknown (GPM needs two samples), never 0", d.Label(), d.UtilGPU)
		}
	}
	second, err := s.Sample(context.Background(), t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Devices) != 3 {
		t.Fatalf("got %d devices, want the parent and two instances", len(second.Devices))
	}
	for i, want := range []struct {
		label     string
		util, mem float64
	}{
		{"GPU 0 · MIG 1 (4g.40gb)", 0.4, 0},
		{"GPU 0 · MIG 2 (3g.40gb)", 93.3, 41},
	} {
		d := second.Devices[1+i]
		if d.Label() != want.label || d.UtilGPU != want.util || d.UtilMem != want.mem {
			t.Errorf("instance %d: %s utilization %v, memory %v; want %s %v %v", i, d.Label(), d.UtilGPU, d.UtilMem, want.label, want.util, want.mem)
		}
	}
	// The administrator destroys the 3g.40gb instance: it leaves the
	// snapshot, and its GPM samples are freed.
	m.instances[1] = nil
	third, err := s.Sample(context.Background(), t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Devices) != 2 || third.Devices[1].UUID != "MIG-big" {
		t.Errorf("after the 3g.40gb instance went: got %d devices, want the parent and MIG-big", len(third.Devices))
	}
	if m.frees != 2 {
		t.Errorf("GPM samples freed: %d, want the destroyed instance's 2", m.frees)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if m.frees != m.allocs {
		t.Errorf("after Close: %d GPM samples allocated, %d freed", m.allocs, m.frees)
	}
}

func TestSampleMIGWithoutGPMSymbol(t *testing.T) {
	g, m := sevenSlices()
	m.gpm = true
	h := newFakeHost(g)
	h.missing["nvmlGpmQueryDeviceSupport"] = true // a driver before GPM
	m.enable(h, 0)
	s := h.open(t, Options{})
	for i := range 2 {
		snap, err := s.Sample(context.Background(), t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if u := snap.Devices[1].UtilGPU; !math.IsNaN(u) {
			t.Errorf("sample %d: utilization %v, want unknown", i, u)
		}
	}
	if n := callsMade(h.devices[0])["GpmQueryDeviceSupport"]; n > 0 {
		t.Errorf("GpmQueryDeviceSupport called without the symbol")
	}
	if m.allocs != 0 {
		t.Errorf("%d GPM samples allocated without GPM", m.allocs)
	}
}

func TestSampleMIGGPULost(t *testing.T) {
	g, m := sevenSlices()
	h := newFakeHost(g)
	m.enable(h, 0)
	s := h.open(t, Options{})
	if _, err := s.Sample(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	g.lost = true
	snap, err := s.Sample(context.Background(), t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Devices) != 0 || len(snap.Events) != 1 || snap.Events[0].Kind != gpu.EventGPULost {
		t.Errorf("lost GPU in MIG mode: got %d devices and events %+v, want none and one lost event", len(snap.Devices), snap.Events)
	}
	if !strings.Contains(snap.Events[0].Detail, "GPU-a100") {
		t.Errorf("lost event %q does not name the GPU", snap.Events[0].Detail)
	}
}
