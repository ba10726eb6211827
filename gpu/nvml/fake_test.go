package nvml

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// fakeGPU is what one mocked GPU answers. Zero Return fields mean SUCCESS;
// lost makes every call answer ERROR_GPU_IS_LOST.
type fakeGPU struct {
	uuid, name string
	lost       bool

	mem               gonvml.Memory
	reserved          uint64 // memory info v2's Reserved
	memV2Ret          gonvml.Return
	memV1Ret          gonvml.Return
	util              gonvml.Utilization
	utilRet           gonvml.Return
	temp              uint32
	tempRet           gonvml.Return
	powerMW           uint32
	powerRet          gonvml.Return
	limitMW           uint32
	enforcedRet       gonvml.Return
	managementLimitMW uint32
	managementRet     gonvml.Return
	compute           []gonvml.ProcessInfo
	computeRet        gonvml.Return
	graphics          []gonvml.ProcessInfo
	graphicsRet       gonvml.Return
	registerRet       gonvml.Return
	handleRet         gonvml.Return // DeviceGetHandleByIndex
	migMode           int           // GetMigMode's current mode: 0, MIG disabled, as on most GPUs
	migRet            gonvml.Return // ERROR_NOT_SUPPORTED for a GPU without MIG
}

// answer is the Return a call gets: ERROR_GPU_IS_LOST when lost, else ret.
func (f *fakeGPU) answer(ret gonvml.Return) gonvml.Return {
	if f.lost {
		return gonvml.ERROR_GPU_IS_LOST
	}
	return ret
}

// device builds the mock.Device that answers as f does at each call.
func (f *fakeGPU) device() *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, gonvml.Return) { return f.uuid, f.answer(gonvml.SUCCESS) },
		GetNameFunc: func() (string, gonvml.Return) { return f.name, f.answer(gonvml.SUCCESS) },
		GetMemoryInfo_v2Func: func() (gonvml.Memory_v2, gonvml.Return) {
			return gonvml.Memory_v2{Total: f.mem.Total, Free: f.mem.Free, Used: f.mem.Used, Reserved: f.reserved}, f.answer(f.memV2Ret)
		},
		GetMemoryInfoFunc: func() (gonvml.Memory, gonvml.Return) {
			// v1 counts reserved memory as used; the 1 MiB tells the two apart.
			m := f.mem
			m.Used += 1 << 20
			return m, f.answer(f.memV1Ret)
		},
		GetUtilizationRatesFunc: func() (gonvml.Utilization, gonvml.Return) { return f.util, f.answer(f.utilRet) },
		GetTemperatureFunc: func(s gonvml.TemperatureSensors) (uint32, gonvml.Return) {
			if s != gonvml.TEMPERATURE_GPU {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return f.temp, f.answer(f.tempRet)
		},
		GetPowerUsageFunc:           func() (uint32, gonvml.Return) { return f.powerMW, f.answer(f.powerRet) },
		GetEnforcedPowerLimitFunc:   func() (uint32, gonvml.Return) { return f.limitMW, f.answer(f.enforcedRet) },
		GetPowerManagementLimitFunc: func() (uint32, gonvml.Return) { return f.managementLimitMW, f.answer(f.managementRet) },
		GetComputeRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return f.compute, f.answer(f.computeRet)
		},
		GetGraphicsRunningProcessesFunc: func() ([]gonvml.ProcessInfo, gonvml.Return) {
			return f.graphics, f.answer(f.graphicsRet)
		},
		RegisterEventsFunc: func(uint64, gonvml.EventSet) gonvml.Return { return f.answer(f.registerRet) },
		GetMigModeFunc:     func() (int, int, gonvml.Return) { return f.migMode, f.migMode, f.answer(f.migRet) },
	}
}

// fakeHost is a mocked NVML library with its GPUs and event queue.
type fakeHost struct {
	lib      *mock.Interface
	gpus     []*fakeGPU
	devices  []*mock.Device
	set      *mock.EventSet
	queue    []gonvml.EventData // events Wait returns, in order
	missing  map[string]bool    // symbols LookupSymbol does not find
	createOK gonvml.Return      // EventSetCreate's answer
}

// newFakeHost mocks a library with gpus. Change the fakeGPUs between samples
// to change what the mock answers.
func newFakeHost(gpus ...*fakeGPU) *fakeHost {
	h := &fakeHost{gpus: gpus, missing: map[string]bool{}}
	for _, g := range gpus {
		h.devices = append(h.devices, g.device())
	}
	h.set = &mock.EventSet{
		WaitFunc: func(uint32) (gonvml.EventData, gonvml.Return) {
			if len(h.queue) == 0 {
				return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
			}
			ev := h.queue[0]
			h.queue = h.queue[1:]
			return ev, gonvml.SUCCESS
		},
		FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
	}
	h.lib = &mock.Interface{
		InitFunc:           func() gonvml.Return { return gonvml.SUCCESS },
		ShutdownFunc:       func() gonvml.Return { return gonvml.SUCCESS },
		DeviceGetCountFunc: func() (int, gonvml.Return) { return len(h.devices), gonvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (gonvml.Device, gonvml.Return) {
			if ret := h.gpus[i].answer(h.gpus[i].handleRet); ret != gonvml.SUCCESS {
				return nil, ret
			}
			return h.devices[i], gonvml.SUCCESS
		},
		EventSetCreateFunc: func() (gonvml.EventSet, gonvml.Return) {
			if h.createOK != gonvml.SUCCESS {
				return nil, h.createOK
			}
			return h.set, gonvml.SUCCESS
		},
		ExtensionsFunc: func() gonvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if h.missing[s] {
					return errors.New("undefined symbol: " + s)
				}
				return nil
			}}
		},
	}
	return h
}

// open opens a Sampler on the fake host and closes it when the test ends.
func (h *fakeHost) open(t testing.TB, opts Options) *Sampler {
	t.Helper()
	s, err := Open(h.lib, opts)
	if err != nil {
		t.Fatalf("Open: got error %v, want none", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fakeAttributor attributes processes from a table keyed by PID.
type fakeAttributor map[int]gpu.Process

func (a fakeAttributor) Attribute(p *gpu.Process) {
	if q, ok := a[p.PID]; ok {
		p.User, p.Command, p.Container = q.User, q.Command, q.Container
	}
}

// logBuffer returns a logger that writes text lines into the returned buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// callsMade counts the recorded calls of a moq mock, by method name, leaving
// out methods that were not called.
func callsMade(m any) map[string]int {
	got := map[string]int{}
	v := reflect.ValueOf(m)
	for i := range v.NumMethod() {
		name := v.Type().Method(i).Name
		method := v.Method(i)
		if !strings.HasSuffix(name, "Calls") || method.Type().NumIn() != 0 || method.Type().NumOut() != 1 {
			continue
		}
		if n := method.Call(nil)[0].Len(); n > 0 {
			got[strings.TrimSuffix(name, "Calls")] = n
		}
	}
	return got
}

// sameFloat reports whether a and b are equal, counting NaN equal to NaN.
func sameFloat(a, b float64) bool {
	return a == b || (math.IsNaN(a) && math.IsNaN(b))
}

// diffDevice describes how got differs from want, or returns "".
func diffDevice(got, want gpu.Device) string {
	var diffs []string
	floats := []struct {
		name      string
		got, want float64
	}{
		{"UtilGPU", got.UtilGPU, want.UtilGPU},
		{"UtilMem", got.UtilMem, want.UtilMem},
		{"TempC", got.TempC, want.TempC},
		{"PowerW", got.PowerW, want.PowerW},
		{"PowerLimitW", got.PowerLimitW, want.PowerLimitW},
	}
	for _, f := range floats {
		if !sameFloat(f.got, f.want) {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", f.name, f.got, f.want))
		}
	}
	g, w := got, want
	g.UtilGPU, g.UtilMem, g.TempC, g.PowerW, g.PowerLimitW = 0, 0, 0, 0, 0
	w.UtilGPU, w.UtilMem, w.TempC, w.PowerW, w.PowerLimitW = 0, 0, 0, 0, 0
	if !reflect.DeepEqual(g, w) {
		diffs = append(diffs, fmt.Sprintf("got %+v, want %+v", g, w))
	}
	return strings.Join(diffs, "; ")
}
