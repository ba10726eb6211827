package nvml

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// h100Health is an H100 SXM with an uncorrectable error whose row remap
// waits for a reset, the power brake on, its PCIe link trained at x8 and
// one of its 18 NVLink links down. It has no fan.
func h100Health() *fakeHealth {
	links := make([]gonvml.EnableState, 18)
	for i := range links {
		links[i] = gonvml.FEATURE_ENABLED
	}
	links[7] = gonvml.FEATURE_DISABLED
	return &fakeHealth{
		fields: map[uint32]fakeField{
			gonvml.FI_DEV_ECC_SBE_VOL_TOTAL:                 {v: 12},
			gonvml.FI_DEV_ECC_DBE_VOL_TOTAL:                 {v: 1},
			gonvml.FI_DEV_ECC_SBE_AGG_TOTAL:                 {v: 340},
			gonvml.FI_DEV_ECC_DBE_AGG_TOTAL:                 {v: 1},
			gonvml.FI_DEV_REMAPPED_COR:                      {v: 0},
			gonvml.FI_DEV_REMAPPED_UNC:                      {v: 1},
			gonvml.FI_DEV_REMAPPED_PENDING:                  {v: 1},
			gonvml.FI_DEV_REMAPPED_FAILURE:                  {v: 0},
			gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION:           {v: uint64(gonvml.GPU_RECOVERY_ACTION_GPU_RESET)},
			gonvml.FI_DEV_PCIE_REPLAY_COUNTER:               {v: 5},
			gonvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: {v: 30},
			gonvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: {v: 12},
			gonvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:   {v: 4},
			gonvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: {v: 1},
			// Ampere and later remap rows; they do not retire pages.
		},
		links:       links,
		clockEvents: gonvml.ClocksThrottleReasonHwSlowdown | gonvml.ClocksThrottleReasonHwPowerBrakeSlowdown,
		fanRet:      gonvml.ERROR_NOT_SUPPORTED,
		smClock:     1755, memClock: 2619, smMax: 1980, memMax: 2619,
		pcieGen: 5, pcieWidth: 8, pcieGenMax: 5, pcieWidthMax: 16,
	}
}

// sampleOne samples the host once and returns its only device.
func sampleOne(t *testing.T, s *Sampler) gpu.Device {
	t.Helper()
	snap, err := s.Sample(context.Background(), time.Unix(0, 0))
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(snap.Devices) != 1 {
		t.Fatalf("Sample: got %d devices, want 1", len(snap.Devices))
	}
	return snap.Devices[0]
}

// wantHealth compares a device's health with want, reading by reading;
// readings not in want must be missing.
func wantHealth(t *testing.T, got *gpu.Health, want map[gpu.HealthReading]float64) {
	t.Helper()
	for _, r := range gpu.HealthReadings() {
		v, ok := got.Get(r)
		w, wanted := want[r]
		switch {
		case wanted && !ok:
			t.Errorf("%s: missing, want %v", r, w)
		case !wanted && ok:
			t.Errorf("%s: got %v, want missing (not 0)", r, v)
		case wanted && v != w:
			t.Errorf("%s: got %v, want %v", r, v, w)
		}
	}
}

func TestHealthReadings(t *testing.T) {
	g := &fakeGPU{uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", health: h100Health()}
	log, buf := logBuffer()
	s := newFakeHost(g).open(t, Options{Logger: log})
	d := sampleOne(t, s)
	wantHealth(t, &d.Health, map[gpu.HealthReading]float64{
		gpu.ECCCorrectedVolatile: 12, gpu.ECCUncorrectedVolatile: 1, gpu.ECCCorrectedAggregate: 340, gpu.ECCUncorrectedAggregate: 1,
		gpu.RowRemapCorrectable: 0, gpu.RowRemapUncorrectable: 1, gpu.RowRemapPending: 1, gpu.RowRemapFailed: 0,
		gpu.RecoveryActionReading: float64(gpu.RecoveryReset),
		gpu.ClockEventReasons:     float64(gpu.ClockEventHWSlowdown | gpu.ClockEventHWPowerBrake),
		gpu.PCIeLinkGen:           5, gpu.PCIeLinkGenMax: 5, gpu.PCIeLinkWidth: 8, gpu.PCIeLinkWidthMax: 16, gpu.PCIeReplays: 5,
		gpu.NVLinkCRCErrors: 42, gpu.NVLinkReplayErrors: 4, gpu.NVLinkRecoveryErrors: 1, gpu.NVLinkLinks: 18, gpu.NVLinkLinksDown: 1,
		gpu.SMClock: 1755, gpu.SMClockMax: 1980, gpu.MemClock: 2619, gpu.MemClockMax: 2619,
	})
	if strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("readings a GPU does not give were logged as failures:\n%s", buf)
	}
	// The retired pages and the fan answered ERROR_NOT_SUPPORTED: they are
	// not asked again.
	g.health.fieldsAnswered, g.health.linkAnswers = 0, 0
	fanCalls := len(newFakeHostDevice(s).GetFanSpeedCalls())
	d = sampleOne(t, s)
	if got := len(newFakeHostDevice(s).GetFanSpeedCalls()); got != fanCalls {
		t.Errorf("GetFanSpeed: %d calls after the first sample's ERROR_NOT_SUPPORTED, want none", got-fanCalls)
	}
	if want := len(healthFields()) - 3 + 18; g.health.fieldsAnswered != want {
		t.Errorf("second sample asked %d field values, want %d: the retired pages dropped, each NVLink state kept", g.health.fieldsAnswered, want)
	}
	if v, _ := d.Health.Get(gpu.NVLinkLinksDown); v != 1 {
		t.Errorf("second sample: nvlink.links_down = %v, want 1", v)
	}
	// The link comes back, the brake is released, the remap happens.
	g.health.links[7] = gonvml.FEATURE_ENABLED
	g.health.clockEvents = gonvml.ClocksEventReasonGpuIdle
	g.health.fields[gonvml.FI_DEV_REMAPPED_PENDING] = fakeField{v: 0}
	d = sampleOne(t, s)
	if v, _ := d.Health.Get(gpu.NVLinkLinksDown); v != 0 {
		t.Errorf("nvlink.links_down = %v after the link came back, want 0", v)
	}
	if e, _ := d.Health.ClockEvents(); e.Hardware() {
		t.Errorf("clock events %v after the brake was released, want no hardware slowdown", e.Names())
	}
	if d.Health.Flag(gpu.RowRemapPending) {
		t.Error("row_remap.pending still set after the remap")
	}
}

// newFakeHostDevice is the mock device behind the sampler's first GPU.
func newFakeHostDevice(s *Sampler) *mock.Device { return s.devices[0].handle.(*mock.Device) }

func TestHealthOfGPUWithoutReadings(t *testing.T) {
	// A consumer card and an old driver: every health call answers
	// ERROR_NOT_SUPPORTED. Every reading is missing, sampling works, and
	// nothing is logged as a failure.
	g := &fakeGPU{uuid: "GPU-0", name: "NVIDIA GeForce GTX 1080", temp: 50}
	log, buf := logBuffer()
	s := newFakeHost(g).open(t, Options{Logger: log})
	for range 3 {
		d := sampleOne(t, s)
		if d.Health.Known() {
			t.Errorf("a GPU without health readings: got %v, want every reading missing", d.Health)
		}
		if d.TempC != 50 {
			t.Errorf("temperature: got %v, want 50 (the other readings are unaffected)", d.TempC)
		}
	}
	if strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("unsupported health readings were logged as failures:\n%s", buf)
	}
	calls := callsMade(newFakeHostDevice(s))
	for _, call := range []string{"GetFieldValues", "GetFanSpeed", "GetCurrentClocksEventReasons", "GetClockInfo", "GetCurrPcieLinkGeneration", "GetCurrPcieLinkWidth"} {
		// GetFieldValues once at load (the NVLink links), once in the
		// first sample; GetClockInfo twice (SM, memory); the rest once.
		want := map[string]int{"GetFieldValues": 2, "GetClockInfo": 2}[call]
		if want == 0 {
			want = 1
		}
		if calls[call] != want {
			t.Errorf("%s: %d calls over 3 samples, want %d (not asked again after ERROR_NOT_SUPPORTED)", call, calls[call], want)
		}
	}
}

func TestHealthFieldsOneByOne(t *testing.T) {
	// ECC is off on this GPU: the ECC fields answer ERROR_NOT_SUPPORTED,
	// the rest are read; an ECC count is missing, not 0.
	h := h100Health()
	for _, id := range []uint32{gonvml.FI_DEV_ECC_SBE_VOL_TOTAL, gonvml.FI_DEV_ECC_DBE_VOL_TOTAL, gonvml.FI_DEV_ECC_SBE_AGG_TOTAL, gonvml.FI_DEV_ECC_DBE_AGG_TOTAL} {
		delete(h.fields, id)
	}
	h.links = nil // no NVLink: a PCIe card
	s := newFakeHost(&fakeGPU{uuid: "GPU-0", health: h}).open(t, Options{})
	d := sampleOne(t, s)
	for _, r := range []gpu.HealthReading{gpu.ECCCorrectedVolatile, gpu.ECCUncorrectedAggregate, gpu.NVLinkLinks, gpu.NVLinkLinksDown, gpu.RetiredPagesSBE} {
		if v, ok := d.Health.Get(r); ok {
			t.Errorf("%s = %v, want missing", r, v)
		}
	}
	if v, ok := d.Health.Get(gpu.RowRemapUncorrectable); !ok || v != 1 {
		t.Errorf("row_remap.uncorrectable = %v, %v; want 1", v, ok)
	}
	// A failure that may pass (ERROR_UNKNOWN) leaves this sample's readings
	// missing, is logged once, and is tried again.
	log, buf := logBuffer()
	h2 := h100Health()
	h2.fieldsRet = gonvml.ERROR_UNKNOWN
	g := &fakeGPU{uuid: "GPU-1", health: h2}
	s = newFakeHost(g).open(t, Options{Logger: log})
	for range 2 {
		if d := sampleOne(t, s); d.Health.Known() && func() bool { _, ok := d.Health.Get(gpu.RowRemapPending); return ok }() {
			t.Error("row_remap.pending known although GetFieldValues failed")
		}
	}
	if n := strings.Count(buf.String(), "GPU health reading failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, buf)
	}
	h2.fieldsRet = gonvml.SUCCESS
	if d := sampleOne(t, s); !d.Health.Flag(gpu.RowRemapPending) {
		t.Error("row_remap.pending not read once GetFieldValues answered again")
	}
}

func TestHealthOldDriverThrottleReasons(t *testing.T) {
	h := h100Health()
	h.throttleReasonsOnly = true
	h.throttleReasons = gonvml.ClocksThrottleReasonHwThermalSlowdown
	d := sampleOne(t, newFakeHost(&fakeGPU{uuid: "GPU-0", health: h}).open(t, Options{}))
	if e, ok := d.Health.ClockEvents(); !ok || !e.Has(gpu.ClockEventHWThermal) {
		t.Errorf("clock events on a driver without GetCurrentClocksEventReasons: got %v, %v; want hw_thermal from GetCurrentClocksThrottleReasons", e.Names(), ok)
	}
}

func TestHealthGPULost(t *testing.T) {
	g := &fakeGPU{uuid: "GPU-0", health: h100Health()}
	s := newFakeHost(g).open(t, Options{})
	sampleOne(t, s)
	g.health.fields[gonvml.FI_DEV_ECC_DBE_VOL_TOTAL] = fakeField{ret: gonvml.ERROR_GPU_IS_LOST}
	snap, err := s.Sample(context.Background(), time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Devices) != 0 || len(snap.Events) != 1 || snap.Events[0].Kind != gpu.EventGPULost {
		t.Errorf("a GPU lost while its health is read: got devices %v, events %v; want it reported lost", snap.Devices, snap.Events)
	}
}

func TestFieldNumber(t *testing.T) {
	for _, tc := range []struct {
		typ  gonvml.ValueType
		bits uint64
		want float64
	}{
		{gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 1 << 40, 1 << 40},
		{gonvml.VALUE_TYPE_UNSIGNED_INT, 7, 7},
		{gonvml.VALUE_TYPE_SIGNED_INT, uint64(uint32(0xFFFFFFFF)), -1},
		{gonvml.VALUE_TYPE_SIGNED_LONG_LONG, math.MaxUint64, -1},
		{gonvml.VALUE_TYPE_UNSIGNED_SHORT, 300, 300},
		{gonvml.VALUE_TYPE_DOUBLE, math.Float64bits(2.5), 2.5},
	} {
		fv := gonvml.FieldValue{ValueType: uint32(tc.typ)}
		binary.NativeEndian.PutUint64(fv.Value[:], tc.bits)
		if got, ok := fieldNumber(fv); !ok || got != tc.want {
			t.Errorf("type %d: got %v, %v; want %v", tc.typ, got, ok, tc.want)
		}
	}
	if _, ok := fieldNumber(gonvml.FieldValue{ValueType: uint32(gonvml.VALUE_TYPE_COUNT)}); ok {
		t.Error("an unknown value type decoded")
	}
}
