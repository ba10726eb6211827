package gpu

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestAssess(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	xid := func(code uint64) Event { return Event{Time: at, Kind: EventXID, XID: code} }
	dev := func(set map[HealthReading]float64) *Device {
		d := &Device{TempC: 70}
		for r, v := range set {
			d.Health.Set(r, v)
		}
		return d
	}
	healthy := map[HealthReading]float64{ECCUncorrectedVolatile: 0, RowRemapPending: 0, RowRemapFailed: 0,
		ClockEventReasons: float64(ClockEventSWPowerCap), PCIeLinkWidth: 16, PCIeLinkWidthMax: 16, NVLinkLinksDown: 0}
	with := func(more map[HealthReading]float64) map[HealthReading]float64 {
		out := map[HealthReading]float64{}
		for r, v := range healthy {
			out[r] = v
		}
		for r, v := range more {
			out[r] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		d      *Device
		recent []Event
		want   string
	}{
		{"no readings", &Device{}, nil, "ok (no health readings)"},
		{"healthy, at its power cap", dev(healthy), nil, "ok"},
		{"an application's XIDs are not the GPU's", dev(healthy), []Event{xid(13), xid(43), xid(13)}, "ok"},
		{"power brake", dev(with(map[HealthReading]float64{ClockEventReasons: float64(ClockEventHWSlowdown | ClockEventHWPowerBrake)})), nil,
			"degraded: slowed down in hardware (hw_slowdown, hw_power_brake)"},
		{"x8", dev(with(map[HealthReading]float64{PCIeLinkWidth: 8})), nil, "degraded: PCIe link at x8 of x16"},
		{"remap pending beats a narrow link", dev(with(map[HealthReading]float64{PCIeLinkWidth: 8, RowRemapPending: 1, ECCUncorrectedVolatile: 1})), []Event{xid(94), xid(63)},
			"needs reset: 1 uncorrectable ECC error(s) since the driver loaded; a row remap is pending: reset the GPU when its job ends"},
		{"the remap is done: its XIDs are no reason", dev(healthy), []Event{xid(94), xid(63)}, "ok"},
		{"remap failed", dev(with(map[HealthReading]float64{RowRemapFailed: 1, RowRemapPending: 1})), nil,
			"needs service: a row remap failed: the GPU ran out of spare rows (NVIDIA's criterion to replace it)"},
		{"fallen off the bus", dev(healthy), []Event{xid(13), xid(79)},
			"needs reset: XID 79: the GPU has fallen off the bus — reset the GPU or reboot the node"},
		{"an XID of a GPU without memory readings", &Device{}, []Event{xid(48)},
			"needs reset: XID 48: double-bit (uncorrectable) ECC error — reset the GPU once its jobs have stopped"},
		{"the driver asks", dev(with(map[HealthReading]float64{RecoveryActionReading: float64(RecoveryReboot)})), nil,
			"needs reset: the driver asks to reboot the node"},
		{"fan stopped while warm", dev(map[HealthReading]float64{FanSpeed: 0}), nil, "degraded: fan at 0% while the GPU is at 70 C"},
	} {
		got := Assess(tc.d, tc.recent).String()
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRecentXIDs(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	r := NewRecentXIDs()
	d0, d1 := Device{Index: 0, UUID: "GPU-0"}, Device{Index: 1, UUID: "GPU-1"}
	snap := func(after time.Duration, devs []Device, evs ...Event) *Snapshot {
		for i := range evs {
			evs[i].Time = at.Add(after)
		}
		return &Snapshot{Time: at.Add(after), Host: "h", Devices: devs, Events: evs}
	}
	r.Observe(snap(0, []Device{d0, d1}, Event{Kind: EventXID, GPU: 0, UUID: "GPU-0", XID: 13}))
	// GPU 1 falls off the bus: XID 79, and it stops reporting.
	r.Observe(snap(time.Minute, []Device{d0}, Event{Kind: EventXID, GPU: 1, UUID: "GPU-1", XID: 79}, Event{Kind: EventGPULost, GPU: 1, UUID: "GPU-1"}))
	if got := r.Of("h", &d1, at.Add(time.Minute)); len(got) != 1 || got[0].XID != 79 {
		t.Errorf("GPU 1: got %v, want its XID 79", got)
	}
	if got := r.Of("other", &d1, at.Add(time.Minute)); len(got) != 0 {
		t.Errorf("GPU 1 of another host: got %v, want none", got)
	}
	// It is back after a reset: its XID 79 is forgotten.
	r.Observe(snap(20*time.Minute, []Device{d0, d1}))
	if got := r.Of("h", &d1, at.Add(20*time.Minute)); len(got) != 0 {
		t.Errorf("GPU 1 back after a reset: got %v, want nothing held against it", got)
	}
	if got := r.Of("h", &d0, at.Add(20*time.Minute)); len(got) != 1 {
		t.Errorf("GPU 0: got %v, want its XID 13", got)
	}
	r.Observe(snap(RecentXIDWindow+time.Minute, []Device{d0, d1}))
	if got := r.Of("h", &d0, at.Add(RecentXIDWindow+time.Minute)); len(got) != 0 {
		t.Errorf("GPU 0 after %v: got %v, want its XID forgotten", RecentXIDWindow, got)
	}
}

func TestXIDCatalogue(t *testing.T) {
	cat := XIDCatalogue()
	for i, x := range cat {
		if i > 0 && cat[i-1].Code >= x.Code {
			t.Fatalf("the catalogue is not sorted by code at %d", x.Code)
		}
		if got, ok := LookupXID(x.Code); !ok || got != x {
			t.Errorf("LookupXID(%d) = %v, %v", x.Code, got, ok)
		}
		if x.Name == "" || x.Fault == FaultUnknown {
			t.Errorf("XID %d: no name or fault", x.Code)
		}
	}
	for _, tc := range []struct {
		code   uint64
		fault  XIDFault
		action XIDAction
		text   string
	}{
		{79, FaultHardware, ActionReboot, "XID 79: the GPU has fallen off the bus — reset the GPU or reboot the node"},
		{13, FaultApplication, ActionRestart, "XID 13: graphics engine exception, usually the application's out-of-range access or illegal instruction — restart the application"},
		{48, FaultHardware, ActionReset, "XID 48: double-bit (uncorrectable) ECC error — reset the GPU once its jobs have stopped"},
		{64, FaultHardware, ActionSupport, "XID 64: a row remap or page retirement failed to record — drain the GPU and call NVIDIA support"},
		{9999, FaultUnknown, ActionSupport, "XID 9999: not in gpuwatch's catalogue: see https://docs.nvidia.com/deploy/xid-errors/ — drain the GPU and call NVIDIA support"},
	} {
		x, _ := LookupXID(tc.code)
		if XIDFaultOf(tc.code) != tc.fault || XIDActionOf(tc.code) != tc.action || x.Text() != tc.text {
			t.Errorf("XID %d: %s, %s, %q; want %s, %s, %q", tc.code, XIDFaultOf(tc.code), XIDActionOf(tc.code), x.Text(), tc.fault, tc.action, tc.text)
		}
	}
	for _, name := range XIDFaultNames() {
		if f, ok := LookupXIDFault(name); !ok || f.String() != name {
			t.Errorf("LookupXIDFault(%q) = %v, %v", name, f, ok)
		}
	}
	for _, name := range XIDActionNames() {
		if a, ok := LookupXIDAction(name); !ok || a.String() != name {
			t.Errorf("LookupXIDAction(%q) = %v, %v", name, a, ok)
		}
	}
}

func TestHealthReadingsAndJSON(t *testing.T) {
	var h Health
	if h.Known() {
		t.Fatal("the zero Health knows a reading")
	}
	h.Set(ECCUncorrectedVolatile, 0)
	h.Set(ClockEventReasons, float64(ClockEventHWPowerBrake|ClockEventHWSlowdown))
	h.Set(RecoveryActionReading, float64(RecoveryReset))
	h.Set(FanSpeed, 3)
	h.Set(FanSpeed, math.NaN())
	if v, ok := h.Get(ECCUncorrectedVolatile); !ok || v != 0 {
		t.Errorf("a reading of 0 is known: got %v, %v", v, ok)
	}
	if _, ok := h.Get(FanSpeed); ok {
		t.Error("a NaN reading is known")
	}
	b, err := h.MarshalJSON()
	if err != nil || string(b) != `{"ecc.uncorrected.volatile":0,"recovery_action":"reset","throttle.reasons":["hw_slowdown","hw_power_brake"]}` {
		t.Errorf("JSON: got %s, %v", b, err)
	}
	var back Health
	if err := back.UnmarshalJSON(b); err != nil || back != h {
		t.Errorf("JSON read back: got %v, %v; want %v", back, err, h)
	}
	var c Condition
	if err := c.UnmarshalText([]byte("needs reset")); err != nil || c != ConditionNeedsReset {
		t.Errorf("UnmarshalText: got %v, %v", c, err)
	}
	if err := c.UnmarshalText([]byte("broken")); err == nil {
		t.Error("UnmarshalText of a wrong condition: no error")
	}
	for _, r := range HealthReadings() {
		if got, ok := LookupHealthReading(r.String()); !ok || got != r {
			t.Errorf("LookupHealthReading(%q) = %v, %v", r, got, ok)
		}
	}
}
