package nvml

import (
	"encoding/binary"
	"math"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// healthCall names one NVML call of the health readings, as a bit in a
// device's health masks.
type healthCall uint16

const (
	callFieldValues healthCall = 1 << iota
	callClockEvents
	callFan
	callSMClock
	callMemClock
	callPCIeGen
	callPCIeWidth
)

// String names the NVML call, for logs.
func (c healthCall) String() string {
	switch c {
	case callFieldValues:
		return "GetFieldValues"
	case callClockEvents:
		return "GetCurrentClocksEventReasons"
	case callFan:
		return "GetFanSpeed"
	case callSMClock:
		return "GetClockInfo(SM)"
	case callMemClock:
		return "GetClockInfo(MEM)"
	case callPCIeGen:
		return "GetCurrPcieLinkGeneration"
	case callPCIeWidth:
		return "GetCurrPcieLinkWidth"
	}
	return "unknown"
}

// healthField is one NVML field value a health reading is made of.
type healthField struct {
	id      uint32
	reading gpu.HealthReading
	// scope is the NVLink link, for a link's state.
	scope uint32
	// add sums the field into the reading (the CRC errors of flits and of
	// data); linkState counts a link that is not up.
	add, linkState bool
}

// healthFields are the field values read with one GetFieldValues a
// sample; NVLink states are added per link by healthOf.
func healthFields() []healthField {
	return []healthField{
		{id: gonvml.FI_DEV_ECC_SBE_VOL_TOTAL, reading: gpu.ECCCorrectedVolatile},
		{id: gonvml.FI_DEV_ECC_DBE_VOL_TOTAL, reading: gpu.ECCUncorrectedVolatile},
		{id: gonvml.FI_DEV_ECC_SBE_AGG_TOTAL, reading: gpu.ECCCorrectedAggregate},
		{id: gonvml.FI_DEV_ECC_DBE_AGG_TOTAL, reading: gpu.ECCUncorrectedAggregate},
		{id: gonvml.FI_DEV_RETIRED_SBE, reading: gpu.RetiredPagesSBE},
		{id: gonvml.FI_DEV_RETIRED_DBE, reading: gpu.RetiredPagesDBE},
		{id: gonvml.FI_DEV_RETIRED_PENDING, reading: gpu.RetiredPagesPending},
		{id: gonvml.FI_DEV_REMAPPED_COR, reading: gpu.RowRemapCorrectable},
		{id: gonvml.FI_DEV_REMAPPED_UNC, reading: gpu.RowRemapUncorrectable},
		{id: gonvml.FI_DEV_REMAPPED_PENDING, reading: gpu.RowRemapPending},
		{id: gonvml.FI_DEV_REMAPPED_FAILURE, reading: gpu.RowRemapFailed},
		{id: gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION, reading: gpu.RecoveryActionReading},
		{id: gonvml.FI_DEV_PCIE_REPLAY_COUNTER, reading: gpu.PCIeReplays},
		{id: gonvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, reading: gpu.NVLinkCRCErrors, add: true},
		{id: gonvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, reading: gpu.NVLinkCRCErrors, add: true},
		{id: gonvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, reading: gpu.NVLinkReplayErrors},
		{id: gonvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, reading: gpu.NVLinkRecoveryErrors},
	}
}

// deviceHealth is what a device keeps to read its health: what the GPU
// does not support, the readings that do not change (the maxima, the
// NVLink links), and the field value request, reused every sample.
type deviceHealth struct {
	unsupported, warned healthCall
	static              gpu.Health
	fields              []healthField
	request             []gonvml.FieldValue
	// throttleReasons: the driver lacks GetCurrentClocksEventReasons
	// (before 535); the older GetCurrentClocksThrottleReasons answers.
	throttleReasons bool
}

// loadHealth reads what does not change of a GPU's health: the PCIe
// link's and the clocks' maxima and the NVLink links it has; and builds
// the field value request of every sample. A reading the GPU does not
// give stays missing.
func loadHealth(h gonvml.Device, throttleReasons bool) *deviceHealth {
	dh := &deviceHealth{throttleReasons: throttleReasons}
	if v, ret := h.GetMaxPcieLinkGeneration(); ret == gonvml.SUCCESS && v > 0 {
		dh.static.Set(gpu.PCIeLinkGenMax, float64(v))
	}
	if v, ret := h.GetMaxPcieLinkWidth(); ret == gonvml.SUCCESS && v > 0 {
		dh.static.Set(gpu.PCIeLinkWidthMax, float64(v))
	}
	if v, ret := h.GetMaxClockInfo(gonvml.CLOCK_SM); ret == gonvml.SUCCESS && v > 0 {
		dh.static.Set(gpu.SMClockMax, float64(v))
	}
	if v, ret := h.GetMaxClockInfo(gonvml.CLOCK_MEM); ret == gonvml.SUCCESS && v > 0 {
		dh.static.Set(gpu.MemClockMax, float64(v))
	}
	dh.fields = healthFields()
	links := []gonvml.FieldValue{{FieldId: gonvml.FI_DEV_NVLINK_LINK_COUNT}}
	if ret := h.GetFieldValues(links); ret == gonvml.SUCCESS && gonvml.Return(links[0].NvmlReturn) == gonvml.SUCCESS {
		if n, ok := fieldNumber(links[0]); ok && n > 0 && n <= 64 {
			dh.static.Set(gpu.NVLinkLinks, n)
			dh.static.Set(gpu.NVLinkLinksDown, 0)
			for link := range int(n) {
				dh.fields = append(dh.fields, healthField{id: gonvml.FI_DEV_NVLINK_GET_STATE, reading: gpu.NVLinkLinksDown, linkState: true, scope: uint32(link)})
			}
		}
	}
	dh.buildRequest()
	return dh
}

// buildRequest makes the field value request of dh.fields.
func (dh *deviceHealth) buildRequest() {
	dh.request = make([]gonvml.FieldValue, len(dh.fields))
	for i, f := range dh.fields {
		dh.request[i] = gonvml.FieldValue{FieldId: f.id, ScopeId: f.scope}
	}
}

// result sorts the answer of one health call as device.result does: true
// when the value can be used; ERROR_GPU_IS_LOST when the GPU is gone;
// ERROR_NOT_SUPPORTED stops the call being made again; another failure
// is logged once and leaves the reading missing.
func (dh *deviceHealth) result(r *reading, c healthCall, ret gonvml.Return) bool {
	switch ret {
	case gonvml.SUCCESS:
		return true
	case gonvml.ERROR_GPU_IS_LOST:
		r.err = gonvml.ERROR_GPU_IS_LOST
		return false
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND:
		dh.unsupported |= c
		return false
	}
	if dh.warned&c == 0 {
		dh.warned |= c
		r.log.Warn("GPU health reading failed; reporting it as unknown", "gpu", r.d.index, "uuid", r.d.uuid, "call", c.String(), "err", ret.Error())
	}
	return false
}

// callHealth makes the call c unless the GPU does not support it or is
// lost; ok is true when the value can be used.
func callHealth[T any](r *reading, dh *deviceHealth, c healthCall, call func() (T, gonvml.Return)) (v T, ok bool) {
	if r.err != nil || dh.unsupported&c != 0 {
		return v, false
	}
	v, ret := call()
	return v, dh.result(r, c, ret)
}

// readHealth reads the GPU's health into out: one GetFieldValues for the
// counters and states, and a call each for the clock event reasons, the
// fan, the clocks and the PCIe link.
func (d *device) readHealth(r *reading, out *gpu.Health) {
	dh := d.health
	if dh == nil {
		return
	}
	*out = dh.static
	dh.readFields(r, out)
	var reasons uint64
	var ok bool
	if dh.throttleReasons {
		reasons, ok = callHealth(r, dh, callClockEvents, d.handle.GetCurrentClocksThrottleReasons)
	} else {
		reasons, ok = callHealth(r, dh, callClockEvents, d.handle.GetCurrentClocksEventReasons)
	}
	if ok {
		out.Set(gpu.ClockEventReasons, float64(reasons))
	}
	if v, ok := callHealth(r, dh, callFan, d.handle.GetFanSpeed); ok {
		out.Set(gpu.FanSpeed, float64(v))
	}
	if v, ok := callHealth(r, dh, callSMClock, d.smClock); ok {
		out.Set(gpu.SMClock, float64(v))
	}
	if v, ok := callHealth(r, dh, callMemClock, d.memClock); ok {
		out.Set(gpu.MemClock, float64(v))
	}
	if v, ok := callHealth(r, dh, callPCIeGen, d.handle.GetCurrPcieLinkGeneration); ok && v > 0 {
		out.Set(gpu.PCIeLinkGen, float64(v))
	}
	if v, ok := callHealth(r, dh, callPCIeWidth, d.handle.GetCurrPcieLinkWidth); ok && v > 0 {
		out.Set(gpu.PCIeLinkWidth, float64(v))
	}
}

func (d *device) smClock() (uint32, gonvml.Return)  { return d.handle.GetClockInfo(gonvml.CLOCK_SM) }
func (d *device) memClock() (uint32, gonvml.Return) { return d.handle.GetClockInfo(gonvml.CLOCK_MEM) }

// readFields reads the field values into out. A field the GPU answers
// ERROR_NOT_SUPPORTED (no ECC, no NVLink, row remapping on a GPU that
// retires pages instead) is left out of later requests.
func (dh *deviceHealth) readFields(r *reading, out *gpu.Health) {
	if len(dh.request) == 0 || r.err != nil || dh.unsupported&callFieldValues != 0 {
		return
	}
	for i := range dh.request {
		dh.request[i].NvmlReturn, dh.request[i].Value = 0, [8]byte{}
	}
	if !dh.result(r, callFieldValues, r.d.handle.GetFieldValues(dh.request)) {
		return
	}
	dropped := false
	for i, fv := range dh.request {
		f := dh.fields[i]
		switch ret := gonvml.Return(fv.NvmlReturn); ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_GPU_IS_LOST:
			r.err = gonvml.ERROR_GPU_IS_LOST
			return
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_FUNCTION_NOT_FOUND, gonvml.ERROR_INVALID_ARGUMENT:
			// An older driver answers a field it does not know (the
			// recovery action) with an invalid argument.
			dh.fields[i].id, dropped = 0, true
			if f.linkState {
				out.Clear(gpu.NVLinkLinksDown)
			}
			continue
		default:
			if f.linkState {
				out.Clear(gpu.NVLinkLinksDown)
			}
			continue
		}
		v, ok := fieldNumber(fv)
		switch {
		case !ok:
		case f.linkState:
			if links, known := out.Get(gpu.NVLinkLinksDown); known && gonvml.EnableState(v) != gonvml.FEATURE_ENABLED {
				out.Set(gpu.NVLinkLinksDown, links+1)
			}
		case f.add:
			sum, _ := out.Get(f.reading)
			out.Set(f.reading, sum+v)
		case f.reading == gpu.RetiredPagesPending:
			out.Set(f.reading, flag(v != 0))
		default:
			out.Set(f.reading, v)
		}
	}
	if dropped {
		kept := dh.fields[:0]
		for _, f := range dh.fields {
			if f.id != 0 {
				kept = append(kept, f)
			}
		}
		dh.fields = kept
		if len(dh.fields) == 0 || !hasLinkState(dh.fields) {
			dh.static.Clear(gpu.NVLinkLinksDown)
		}
		dh.buildRequest()
	}
}

// hasLinkState reports whether the fields still ask for an NVLink state.
func hasLinkState(fields []healthField) bool {
	for _, f := range fields {
		if f.linkState {
			return true
		}
	}
	return false
}

// fieldNumber decodes a field value's number by its type.
func fieldNumber(fv gonvml.FieldValue) (float64, bool) {
	b := fv.Value[:]
	switch gonvml.ValueType(fv.ValueType) {
	case gonvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(b)), true
	case gonvml.VALUE_TYPE_UNSIGNED_LONG, gonvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b)), true
	case gonvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b))), true
	case gonvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b))), true
	case gonvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b)), true
	}
	return 0, false
}

// flag is 1 for true, 0 for false.
func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
