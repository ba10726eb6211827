package nvml

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
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
	// health answers the health calls; nil answers ERROR_NOT_SUPPORTED to
	// every one, as a GPU and driver without them.
	health *fakeHealth
}

// fakeHealth is what a mocked GPU answers to the health calls. A field
// value not in fields answers ERROR_NOT_SUPPORTED; links are the NVLink
// links' states (none: no NVLink).
type fakeHealth struct {
	fields                      map[uint32]fakeField
	fieldsRet                   gonvml.Return // GetFieldValues as a whole
	links                       []gonvml.EnableState
	clockEvents                 uint64
	clockEventsRet              gonvml.Return
	fan                         uint32
	fanRet                      gonvml.Return
	smClock, memClock           uint32
	smMax, memMax               uint32
	clockRet                    gonvml.Return
	pcieGen, pcieWidth          int
	pcieGenMax, pcieWidthMax    int
	pcieRet                     gonvml.Return
	throttleReasonsOnly         bool // an old driver: GetCurrentClocksEventReasons is missing
	throttleReasons             uint64
	pcieMaxRet, clockMaxRet     gonvml.Return
	fieldsAnswered, linkAnswers int // how many field values, and link states of them, were answered
}

// fakeField is one field value's answer.
type fakeField struct {
	v   uint64
	ret gonvml.Return
}

// healthAnswer is the Return of a health call: ERROR_NOT_SUPPORTED without
// health, else as answer.
func (f *fakeGPU) healthAnswer(ret gonvml.Return) gonvml.Return {
	if f.health == nil && !f.lost {
		return gonvml.ERROR_NOT_SUPPORTED
	}
	return f.answer(ret)
}

// fieldValues fills values as NVML's GetFieldValues does.
func (f *fakeGPU) fieldValues(values []gonvml.FieldValue) gonvml.Return {
	if ret := f.healthAnswer(gonvml.SUCCESS); ret != gonvml.SUCCESS {
		return ret
	}
	h := f.health
	if h.fieldsRet != gonvml.SUCCESS {
		return h.fieldsRet
	}
	for i := range values {
		fv := &values[i]
		fv.ValueType = uint32(gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
		ans, ok := h.fields[fv.FieldId]
		switch {
		case fv.FieldId == gonvml.FI_DEV_NVLINK_LINK_COUNT && len(h.links) > 0:
			ans, ok = fakeField{v: uint64(len(h.links))}, true
		case fv.FieldId == gonvml.FI_DEV_NVLINK_GET_STATE && int(fv.ScopeId) < len(h.links):
			ans, ok = fakeField{v: uint64(h.links[fv.ScopeId])}, true
			h.linkAnswers++
		}
		if !ok {
			ans.ret = gonvml.ERROR_NOT_SUPPORTED
		}
		fv.NvmlReturn = uint32(ans.ret)
		binary.NativeEndian.PutUint64(fv.Value[:], ans.v)
		h.fieldsAnswered++
	}
	return gonvml.SUCCESS
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
		GetFieldValuesFunc: f.fieldValues,
		GetCurrentClocksEventReasonsFunc: func() (uint64, gonvml.Return) {
			if f.health != nil && f.health.throttleReasonsOnly {
				panic("GetCurrentClocksEventReasons called on a driver without it: NVML would abort the process")
			}
			return f.hv().clockEvents, f.healthAnswer(f.hv().clockEventsRet)
		},
		GetCurrentClocksThrottleReasonsFunc: func() (uint64, gonvml.Return) {
			return f.hv().throttleReasons, f.healthAnswer(gonvml.SUCCESS)
		},
		GetFanSpeedFunc: func() (uint32, gonvml.Return) { return f.hv().fan, f.healthAnswer(f.hv().fanRet) },
		GetClockInfoFunc: func(c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_SM {
				return f.hv().smClock, f.healthAnswer(f.hv().clockRet)
			}
			return f.hv().memClock, f.healthAnswer(f.hv().clockRet)
		},
		GetMaxClockInfoFunc: func(c gonvml.ClockType) (uint32, gonvml.Return) {
			if c == gonvml.CLOCK_SM {
				return f.hv().smMax, f.healthAnswer(f.hv().clockMaxRet)
			}
			return f.hv().memMax, f.healthAnswer(f.hv().clockMaxRet)
		},
		GetCurrPcieLinkGenerationFunc: func() (int, gonvml.Return) { return f.hv().pcieGen, f.healthAnswer(f.hv().pcieRet) },
		GetCurrPcieLinkWidthFunc:      func() (int, gonvml.Return) { return f.hv().pcieWidth, f.healthAnswer(f.hv().pcieRet) },
		GetMaxPcieLinkGenerationFunc:  func() (int, gonvml.Return) { return f.hv().pcieGenMax, f.healthAnswer(f.hv().pcieMaxRet) },
		GetMaxPcieLinkWidthFunc:       func() (int, gonvml.Return) { return f.hv().pcieWidthMax, f.healthAnswer(f.hv().pcieMaxRet) },
	}
}

// hv is the GPU's health answers; the zero ones without health.
func (f *fakeGPU) hv() *fakeHealth {
	if f.health == nil {
		return &fakeHealth{}
	}
	return f.health
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
				if s == "nvmlDeviceGetCurrentClocksEventReasons" && slices.ContainsFunc(h.gpus, func(g *fakeGPU) bool { return g.health != nil && g.health.throttleReasonsOnly }) {
					return errors.New("undefined symbol: " + s)
				}
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
