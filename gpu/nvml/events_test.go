package nvml

import (
	"context"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuwatch/gpuwatch/gpu"
)

func TestSampleDrainsXIDEvents(t *testing.T) {
	busy, idle := twoGPUs()
	h := newFakeHost(busy, idle)
	s := h.open(t, Options{})
	// A handle the sampler never got, but with a known UUID, as a real
	// library may hand out: matched by UUID.
	stranger := (&fakeGPU{uuid: "GPU-bbbb"}).device()
	unknown := (&fakeGPU{uuid: "GPU-zzzz"}).device()
	h.queue = []gonvml.EventData{
		{Device: h.devices[1], EventType: gonvml.EventTypeXidCriticalError, EventData: 79},
		{Device: h.devices[0], EventType: gonvml.EventTypeSingleBitEccError}, // not asked for: ignored
		{Device: h.devices[0], EventType: gonvml.EventTypeXidCriticalError, EventData: 48},
		{Device: stranger, EventType: gonvml.EventTypeXidCriticalError, EventData: 13},
		{Device: unknown, EventType: gonvml.EventTypeXidCriticalError, EventData: 999},
	}

	snap, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	want := []struct {
		gpu    int
		uuid   string
		xid    uint64
		detail string
	}{
		{1, "GPU-bbbb", 79, "XID 79 on GPU 1 (GPU-bbbb): GPU has fallen off the bus"},
		{0, "GPU-aaaa", 48, "XID 48 on GPU 0 (GPU-aaaa): double-bit ECC error"},
		{1, "GPU-bbbb", 13, "XID 13 on GPU 1 (GPU-bbbb): graphics engine exception"},
		{-1, "", 999, "XID 999 on an unknown GPU: see https://docs.nvidia.com/deploy/xid-errors/"},
	}
	if len(snap.Events) != len(want) {
		t.Fatalf("events: got %d (%+v), want %d", len(snap.Events), snap.Events, len(want))
	}
	for i, w := range want {
		ev := snap.Events[i]
		if ev.Kind != gpu.EventXID || ev.GPU != w.gpu || ev.UUID != w.uuid || ev.XID != w.xid || !ev.Time.Equal(t0) {
			t.Errorf("event %d: got %+v, want xid %d on GPU %d (%q) at %v", i, ev, w.xid, w.gpu, w.uuid, t0)
		}
		if !strings.HasPrefix(ev.Detail, w.detail) {
			t.Errorf("event %d: Detail got %q, want it to start with %q", i, ev.Detail, w.detail)
		}
	}
	if len(snap.Devices) != 2 {
		t.Errorf("devices: got %d, want 2", len(snap.Devices))
	}
	waits := h.set.WaitCalls()
	if len(waits) != 6 {
		t.Errorf("Wait calls: got %d, want 6 (five events, then one ERROR_TIMEOUT)", len(waits))
	}
	for i, w := range waits {
		if w.V != 0 {
			t.Errorf("Wait call %d: got timeout %d ms, want 0 (sampling never blocks)", i, w.V)
		}
	}

	snap, err = s.Sample(context.Background(), t0.Add(5e9))
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(snap.Events) != 0 {
		t.Errorf("second sample: got events %+v, want none", snap.Events)
	}
	for i, d := range h.devices {
		calls := d.RegisterEventsCalls()
		if len(calls) != 1 || calls[0].V != gonvml.EventTypeXidCriticalError {
			t.Errorf("GPU %d RegisterEvents: got %+v, want once for EventTypeXidCriticalError", i, calls)
		}
	}
}

func TestXIDDrainStopsOnEndlessEvents(t *testing.T) {
	g := &fakeGPU{uuid: "GPU-0"}
	h := newFakeHost(g)
	h.set.WaitFunc = func(uint32) (gonvml.EventData, gonvml.Return) {
		return gonvml.EventData{Device: h.devices[0], EventType: gonvml.EventTypeXidCriticalError, EventData: 31}, gonvml.SUCCESS
	}
	s := h.open(t, Options{})
	snap, err := s.Sample(context.Background(), t0)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(snap.Events) != maxEventsPerSample {
		t.Errorf("events: got %d, want %d (the cap)", len(snap.Events), maxEventsPerSample)
	}
}

func TestXIDUnavailable(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(h *fakeHost)
		wantWaits int
		wantWarn  string
		wantWarns int // log lines with wantWarn: once per cause, not per sample
	}{
		{
			name:      "event set cannot be created",
			setup:     func(h *fakeHost) { h.createOK = gonvml.ERROR_NOT_SUPPORTED },
			wantWarn:  "XID errors will not be reported",
			wantWarns: 1,
		},
		{
			name: "no GPU can register",
			setup: func(h *fakeHost) {
				for _, g := range h.gpus {
					g.registerRet = gonvml.ERROR_NOT_SUPPORTED
				}
			},
			wantWarn:  "GPU cannot report XID errors",
			wantWarns: 2,
		},
		{
			name:      "one GPU cannot register",
			setup:     func(h *fakeHost) { h.gpus[1].registerRet = gonvml.ERROR_NOT_SUPPORTED },
			wantWaits: 3, // an event and ERROR_TIMEOUT, then ERROR_TIMEOUT
			wantWarn:  "GPU cannot report XID errors",
			wantWarns: 1,
		},
		{
			name: "wait fails",
			setup: func(h *fakeHost) {
				h.set.WaitFunc = func(uint32) (gonvml.EventData, gonvml.Return) { return gonvml.EventData{}, gonvml.ERROR_UNKNOWN }
			},
			wantWaits: 2,
			wantWarn:  "reading NVML events failed",
			wantWarns: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, idle := twoGPUs()
			h := newFakeHost(busy, idle)
			tt.setup(h)
			h.queue = []gonvml.EventData{{Device: h.devices[0], EventType: gonvml.EventTypeXidCriticalError, EventData: 94}}
			log, buf := logBuffer()
			s := h.open(t, Options{Logger: log})
			for i := range 2 {
				snap, err := s.Sample(context.Background(), t0)
				if err != nil {
					t.Fatalf("Sample: %v", err)
				}
				if len(snap.Devices) != 2 {
					t.Errorf("sample %d: got %d devices, want 2 (sampling goes on without events)", i, len(snap.Devices))
				}
			}
			if got := len(h.set.WaitCalls()); got != tt.wantWaits {
				t.Errorf("Wait calls: got %d, want %d", got, tt.wantWaits)
			}
			if n := strings.Count(buf.String(), tt.wantWarn); n != tt.wantWarns {
				t.Errorf("log: got %d lines with %q, want %d:\n%s", n, tt.wantWarn, tt.wantWarns, buf)
			}
		})
	}
}

func TestCloseWithoutEventSet(t *testing.T) {
	h := newFakeHost(&fakeGPU{uuid: "GPU-0"})
	h.createOK = gonvml.ERROR_UNKNOWN
	s, err := Open(h.lib, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: got error %v, want none", err)
	}
	if got := len(h.set.FreeCalls()); got != 0 {
		t.Errorf("Free calls: got %d, want 0 (no set was created)", got)
	}
}

func TestDeviceOfUncomparableHandle(t *testing.T) {
	g := &fakeGPU{uuid: "GPU-0"}
	// Handles of a type that cannot be compared with ==: found by UUID,
	// without the panic == would cause.
	d := &device{index: 3, ready: true, handle: uncomparable{Device: g.device()}, uuid: "GPU-0"}
	h := uncomparable{Device: g.device()}
	if got := deviceOf([]*device{d}, h); got != d {
		t.Errorf("deviceOf: got %v, want GPU 3", got)
	}
	if got := deviceOf([]*device{d}, nil); got != nil {
		t.Errorf("deviceOf(nil): got %v, want nil", got)
	}
}

// uncomparable is a Device whose dynamic type panics under ==.
type uncomparable struct {
	*mock.Device
	_ []int
}
