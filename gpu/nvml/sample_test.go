package nvml

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

const gib = 1 << 30

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// twoGPUs returns a busy H100 with two processes and an idle one.
func twoGPUs() (*fakeGPU, *fakeGPU) {
	busy := &fakeGPU{
		uuid: "GPU-aaaa", name: "NVIDIA H100 80GB HBM3",
		mem:     gonvml.Memory{Total: 80 * gib, Used: 30 * gib, Free: 50 * gib},
		util:    gonvml.Utilization{Gpu: 97, Memory: 41},
		temp:    71,
		powerMW: 612345, limitMW: 700000,
		compute: []gonvml.ProcessInfo{
			{Pid: 4242, UsedGpuMemory: 20 * gib},
			{Pid: 777, UsedGpuMemory: 8 * gib},
		},
		// 777 is both compute and graphics: listed once, with its memory.
		graphics: []gonvml.ProcessInfo{{Pid: 777, UsedGpuMemory: 8 * gib}},
	}
	idle := &fakeGPU{
		uuid: "GPU-bbbb", name: "NVIDIA H100 80GB HBM3",
		mem:     gonvml.Memory{Total: 80 * gib, Free: 80 * gib},
		temp:    34,
		powerMW: 69000, limitMW: 700000,
	}
	return busy, idle
}

func TestSampleTwoGPUs(t *testing.T) {
	busy, idle := twoGPUs()
	h := newFakeHost(busy, idle)
	attr := fakeAttributor{
		4242: {User: "alice", Command: "python train.py", Container: "docker:0123abcd"},
		777:  {User: "bob", Command: "jupyter"},
	}
	s := h.open(t, Options{Host: "gpu-box-1", Attributor: attr})

	snap, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatalf("Sample: got error %v, want none", err)
	}
	if !snap.Time.Equal(t0) {
		t.Errorf("Time: got %v, want %v", snap.Time, t0)
	}
	if snap.Host != "gpu-box-1" {
		t.Errorf("Host: got %q, want %q", snap.Host, "gpu-box-1")
	}
	if len(snap.Events) != 0 {
		t.Errorf("Events: got %v, want none", snap.Events)
	}
	want := []gpu.Device{
		{
			Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H100 80GB HBM3",
			MemUsed: 30 * gib, MemTotal: 80 * gib,
			UtilGPU: 97, UtilMem: 41, TempC: 71, PowerW: 612.345, PowerLimitW: 700,
			Processes: []gpu.Process{
				{PID: 4242, User: "alice", Command: "python train.py", Container: "docker:0123abcd", MemUsed: 20 * gib},
				{PID: 777, User: "bob", Command: "jupyter", MemUsed: 8 * gib},
			},
		},
		{
			Index: 1, UUID: "GPU-bbbb", Name: "NVIDIA H100 80GB HBM3",
			MemUsed: 0, MemTotal: 80 * gib,
			UtilGPU: 0, UtilMem: 0, TempC: 34, PowerW: 69, PowerLimitW: 700,
		},
	}
	if len(snap.Devices) != len(want) {
		t.Fatalf("Devices: got %d, want %d", len(snap.Devices), len(want))
	}
	for i := range want {
		if d := diffDevice(snap.Devices[i], want[i]); d != "" {
			t.Errorf("device %d: %s", i, d)
		}
	}
}

func TestSampleMemoryAPI(t *testing.T) {
	tests := []struct {
		name           string
		memV2Ret       gonvml.Return
		memV1Ret       gonvml.Return
		v2Missing      bool   // the library has no nvmlDeviceGetMemoryInfo_v2
		wantUsed       uint64 // both samples
		wantTotal      uint64
		wantV2, wantV1 uint64 // calls to v2 and v1 over two samples
	}{
		{"v2 works", gonvml.SUCCESS, gonvml.SUCCESS, false, 10 * gib, 40 * gib, 2, 0},
		{"v2 not supported: v1 from then on", gonvml.ERROR_NOT_SUPPORTED, gonvml.SUCCESS, false, 10*gib + 1<<20, 40 * gib, 1, 2},
		{"v2 struct version refused: v1 from then on", gonvml.ERROR_ARGUMENT_VERSION_MISMATCH, gonvml.SUCCESS, false, 10*gib + 1<<20, 40 * gib, 1, 2},
		{"v2 symbol missing: v2 never called", gonvml.SUCCESS, gonvml.SUCCESS, true, 10*gib + 1<<20, 40 * gib, 0, 2},
		{"v2 fails otherwise: v1 this time, v2 tried again", gonvml.ERROR_UNKNOWN, gonvml.SUCCESS, false, 10*gib + 1<<20, 40 * gib, 2, 2},
		{"neither supported: memory unknown", gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NOT_SUPPORTED, false, 0, 0, 1, 1},
		{"v1 fails: memory unknown, tried again", gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NO_PERMISSION, false, 0, 0, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeGPU{uuid: "GPU-0", mem: gonvml.Memory{Total: 40 * gib, Used: 10 * gib}, memV2Ret: tt.memV2Ret, memV1Ret: tt.memV1Ret}
			h := newFakeHost(g)
			h.missing["nvmlDeviceGetMemoryInfo_v2"] = tt.v2Missing
			s := h.open(t, Options{})
			for i := range 2 {
				snap, err := s.Sample(context.Background(), t0.Add(time.Duration(i)*time.Second))
				if err != nil {
					t.Fatalf("Sample: %v", err)
				}
				d := snap.Devices[0]
				if d.MemUsed != tt.wantUsed || d.MemTotal != tt.wantTotal {
					t.Errorf("sample %d: got used %d total %d, want used %d total %d", i, d.MemUsed, d.MemTotal, tt.wantUsed, tt.wantTotal)
				}
			}
			if got := uint64(len(h.devices[0].GetMemoryInfo_v2Calls())); got != tt.wantV2 {
				t.Errorf("GetMemoryInfo_v2 calls: got %d, want %d", got, tt.wantV2)
			}
			if got := uint64(len(h.devices[0].GetMemoryInfoCalls())); got != tt.wantV1 {
				t.Errorf("GetMemoryInfo calls: got %d, want %d", got, tt.wantV1)
			}
		})
	}
}

// TestSampleReservedMemory: memory info v2 says how much the driver keeps
// (its Reserved field, or Total less Used and Free when the driver leaves
// it 0); v1 counts it as used, and the GPU is full at its total.
func TestSampleReservedMemory(t *testing.T) {
	for _, tt := range []struct {
		name         string
		mem          gonvml.Memory
		reservedV2   uint64
		memV2Ret     gonvml.Return
		wantUsed     uint64
		wantReserved uint64
	}{
		{"v2 reports it", gonvml.Memory{Total: 80 * gib, Used: 10 * gib, Free: 70*gib - 598<<20}, 598 << 20, gonvml.SUCCESS, 10 * gib, 598 << 20},
		{"v2 leaves the field 0", gonvml.Memory{Total: 80 * gib, Used: 10 * gib, Free: 70*gib - 598<<20}, 0, gonvml.SUCCESS, 10 * gib, 598 << 20},
		{"v2 adds up to the total", gonvml.Memory{Total: 80 * gib, Used: 10 * gib, Free: 70 * gib}, 0, gonvml.SUCCESS, 10 * gib, 0},
		{"v1 only: counted as used", gonvml.Memory{Total: 80 * gib, Used: 10 * gib, Free: 70*gib - 598<<20}, 598 << 20, gonvml.ERROR_NOT_SUPPORTED, 10*gib + 1<<20, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeGPU{uuid: "GPU-0", mem: tt.mem, reserved: tt.reservedV2, memV2Ret: tt.memV2Ret}
			s := newFakeHost(g).open(t, Options{})
			snap, err := s.Sample(context.Background(), t0)
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			d := snap.Devices[0]
			if d.MemUsed != tt.wantUsed || d.MemReserved != tt.wantReserved {
				t.Errorf("got used %d reserved %d, want used %d reserved %d", d.MemUsed, d.MemReserved, tt.wantUsed, tt.wantReserved)
			}
			if want := d.MemTotal - d.MemReserved; d.MemAllocatable() != want {
				t.Errorf("allocatable %d, want %d", d.MemAllocatable(), want)
			}
		})
	}
}

func TestSampleFailedReadingsAreNaN(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		setup func(*fakeGPU)
		want  [5]float64 // UtilGPU, UtilMem, TempC, PowerW, PowerLimitW
		calls func(h *fakeHost) int
		wantN int // calls over three samples
	}{
		{
			name: "temperature not supported", setup: func(g *fakeGPU) { g.tempRet = gonvml.ERROR_NOT_SUPPORTED },
			want:  [5]float64{50, 20, nan, 100, 300},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetTemperatureCalls()) }, wantN: 1,
		},
		{
			name: "power not supported", setup: func(g *fakeGPU) { g.powerRet = gonvml.ERROR_NOT_SUPPORTED },
			want:  [5]float64{50, 20, 60, nan, 300},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetPowerUsageCalls()) }, wantN: 1,
		},
		{
			name: "utilization not supported", setup: func(g *fakeGPU) { g.utilRet = gonvml.ERROR_NOT_SUPPORTED },
			want:  [5]float64{nan, nan, 60, 100, 300},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetUtilizationRatesCalls()) }, wantN: 1,
		},
		{
			name: "temperature unknown error: NaN, tried again", setup: func(g *fakeGPU) { g.tempRet = gonvml.ERROR_UNKNOWN },
			want:  [5]float64{50, 20, nan, 100, 300},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetTemperatureCalls()) }, wantN: 3,
		},
		{
			name: "enforced limit not supported: management limit", setup: func(g *fakeGPU) { g.enforcedRet = gonvml.ERROR_NOT_SUPPORTED },
			want:  [5]float64{50, 20, 60, 100, 250},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetEnforcedPowerLimitCalls()) }, wantN: 1,
		},
		{
			name: "no power limit at all",
			setup: func(g *fakeGPU) {
				g.enforcedRet, g.managementRet = gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NOT_SUPPORTED
			},
			want:  [5]float64{50, 20, 60, 100, nan},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetPowerManagementLimitCalls()) }, wantN: 1,
		},
		{
			name: "processes not permitted: none listed", setup: func(g *fakeGPU) { g.computeRet = gonvml.ERROR_NO_PERMISSION },
			want:  [5]float64{50, 20, 60, 100, 300},
			calls: func(h *fakeHost) int { return len(h.devices[0].GetComputeRunningProcessesCalls()) }, wantN: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &fakeGPU{
				uuid: "GPU-0", mem: gonvml.Memory{Total: 16 * gib},
				util: gonvml.Utilization{Gpu: 50, Memory: 20}, temp: 60,
				powerMW: 100000, limitMW: 300000, managementLimitMW: 250000,
				compute: []gonvml.ProcessInfo{{Pid: 1, UsedGpuMemory: gib}},
			}
			tt.setup(g)
			h := newFakeHost(g)
			log, buf := logBuffer()
			s := h.open(t, Options{Logger: log})
			for i := range 3 {
				snap, err := s.Sample(context.Background(), t0.Add(time.Duration(i)*time.Second))
				if err != nil {
					t.Fatalf("Sample: %v", err)
				}
				d := snap.Devices[0]
				got := [5]float64{d.UtilGPU, d.UtilMem, d.TempC, d.PowerW, d.PowerLimitW}
				for k := range got {
					if !sameFloat(got[k], tt.want[k]) {
						t.Errorf("sample %d: got readings %v, want %v", i, got, tt.want)
						break
					}
				}
				if d.MemTotal != 16*gib {
					t.Errorf("sample %d: MemTotal got %d, want %d", i, d.MemTotal, 16*gib)
				}
				if g.computeRet != gonvml.SUCCESS && len(d.Processes) != 0 {
					t.Errorf("sample %d: Processes got %v, want none", i, d.Processes)
				}
			}
			if got := tt.calls(h); got != tt.wantN {
				t.Errorf("calls: got %d, want %d", got, tt.wantN)
			}
			if n := strings.Count(buf.String(), "level=WARN"); n > 1 {
				t.Errorf("warnings: got %d, want at most 1 (logged once, not every sample):\n%s", n, buf)
			}
		})
	}
}

func TestSampleGPULost(t *testing.T) {
	busy, idle := twoGPUs()
	h := newFakeHost(busy, idle)
	s := h.open(t, Options{})

	steps := []struct {
		lost        bool // GPU 0 answers ERROR_GPU_IS_LOST
		wantDevices []int
		wantLost    bool // a gpu_lost event for GPU 0 in this snapshot
	}{
		{false, []int{0, 1}, false},
		{true, []int{1}, true},
		{true, []int{1}, false}, // reported once, not every sample
		{false, []int{0, 1}, false},
		{true, []int{1}, true}, // lost again: a new event
	}
	for i, st := range steps {
		busy.lost = st.lost
		at := t0.Add(time.Duration(i) * 5 * time.Second)
		snap, err := s.Sample(context.Background(), at)
		if err != nil {
			t.Fatalf("step %d: Sample: %v", i, err)
		}
		var gotDevices []int
		for _, d := range snap.Devices {
			gotDevices = append(gotDevices, d.Index)
		}
		if !slices.Equal(gotDevices, st.wantDevices) {
			t.Errorf("step %d: devices got %v, want %v", i, gotDevices, st.wantDevices)
		}
		var lost []gpu.Event
		for _, ev := range snap.Events {
			if ev.Kind == gpu.EventGPULost {
				lost = append(lost, ev)
			}
		}
		if !st.wantLost {
			if len(lost) != 0 {
				t.Errorf("step %d: gpu_lost events got %v, want none", i, lost)
			}
			continue
		}
		if len(lost) != 1 {
			t.Fatalf("step %d: gpu_lost events got %d, want 1", i, len(lost))
		}
		ev := lost[0]
		if ev.GPU != 0 || ev.UUID != "GPU-aaaa" || !ev.Time.Equal(at) {
			t.Errorf("step %d: event got GPU %d UUID %q Time %v, want GPU 0 UUID GPU-aaaa Time %v", i, ev.GPU, ev.UUID, ev.Time, at)
		}
		if !strings.Contains(ev.Detail, "GPU 0 (GPU-aaaa) is lost") {
			t.Errorf("step %d: Detail got %q, want it to name the GPU", i, ev.Detail)
		}
	}
}

func TestSampleDeviceUnavailableAtOpen(t *testing.T) {
	busy, idle := twoGPUs()
	idle.handleRet = gonvml.ERROR_UNKNOWN
	h := newFakeHost(busy, idle)
	s := h.open(t, Options{})

	snap, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(snap.Devices) != 1 || snap.Devices[0].Index != 0 {
		t.Fatalf("first sample: got %d devices, want only GPU 0", len(snap.Devices))
	}
	idle.handleRet = gonvml.SUCCESS
	snap, err = s.Sample(context.Background(), t0.Add(time.Second))
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(snap.Devices) != 2 || snap.Devices[1].UUID != "GPU-bbbb" {
		t.Fatalf("second sample: got %+v, want GPU 1 (GPU-bbbb) back", snap.Devices)
	}
	if got := len(h.devices[1].RegisterEventsCalls()); got != 1 {
		t.Errorf("RegisterEvents calls for the late GPU: got %d, want 1", got)
	}
}

func TestSampleLostAtOpen(t *testing.T) {
	busy, idle := twoGPUs()
	idle.lost = true
	h := newFakeHost(busy, idle)
	s := h.open(t, Options{})
	for i, wantEvents := range []int{1, 0} {
		snap, err := s.Sample(context.Background(), t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		if len(snap.Devices) != 1 {
			t.Errorf("sample %d: got %d devices, want 1", i, len(snap.Devices))
		}
		if len(snap.Events) != wantEvents {
			t.Errorf("sample %d: got events %v, want %d", i, snap.Events, wantEvents)
		}
		if wantEvents == 1 && (snap.Events[0].Kind != gpu.EventGPULost || snap.Events[0].GPU != 1) {
			t.Errorf("sample %d: got event %+v, want gpu_lost on GPU 1", i, snap.Events[0])
		}
	}
}

func TestSampleCanceledContext(t *testing.T) {
	busy, idle := twoGPUs()
	s := newFakeHost(busy, idle).open(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Sample(ctx, t0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sample: got error %v, want context.Canceled", err)
	}
}

func TestMergeProcesses(t *testing.T) {
	tests := []struct {
		name  string
		lists [][]gonvml.ProcessInfo
		want  []gpu.Process
	}{
		{"none", nil, nil},
		{"distinct", [][]gonvml.ProcessInfo{{{Pid: 1, UsedGpuMemory: 10}}, {{Pid: 2, UsedGpuMemory: 20}}},
			[]gpu.Process{{PID: 1, MemUsed: 10}, {PID: 2, MemUsed: 20}}},
		{"same pid in both keeps the larger", [][]gonvml.ProcessInfo{{{Pid: 1, UsedGpuMemory: 10}}, {{Pid: 1, UsedGpuMemory: 30}}},
			[]gpu.Process{{PID: 1, MemUsed: 30}}},
		{"memory not available is 0", [][]gonvml.ProcessInfo{{{Pid: 9, UsedGpuMemory: math.MaxUint64}}},
			[]gpu.Process{{PID: 9, MemUsed: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []gpu.Process
			for _, l := range tt.lists {
				got = mergeProcesses(got, l)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("process %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
