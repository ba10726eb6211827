package nvml

import (
	"fmt"
	"log/slog"
	"reflect"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// maxEventsPerSample bounds how many events one sample drains, so that an
// XID storm (or a library that never says ERROR_TIMEOUT) cannot stall
// sampling; the rest wait for the next sample.
const maxEventsPerSample = 256

// xidEvents is the NVML event set the GPUs report XID errors to.
type xidEvents struct {
	set        gonvml.EventSet
	log        *slog.Logger
	registered int  // devices registered; no wait while there are none
	warned     bool // a failed Wait was logged
}

// newXIDEvents creates the event set, or returns nil (and logs why) when the
// driver cannot: XID errors then go unreported but sampling works.
func newXIDEvents(lib gonvml.Interface, log *slog.Logger) *xidEvents {
	set, ret := lib.EventSetCreate()
	if ret != gonvml.SUCCESS {
		log.Warn("cannot create an NVML event set; XID errors will not be reported", "err", ret.Error())
		return nil
	}
	return &xidEvents{set: set, log: log}
}

// register asks for d's critical XID errors. A GPU that cannot report them
// is logged once and otherwise sampled as usual.
func (x *xidEvents) register(d *device) {
	ret := d.handle.RegisterEvents(gonvml.EventTypeXidCriticalError, x.set)
	if ret != gonvml.SUCCESS {
		x.log.Warn("GPU cannot report XID errors; they will not be alerted on", "gpu", d.index, "uuid", d.uuid, "err", ret.Error())
		return
	}
	x.registered++
}

// drain appends the XID errors waiting in the set to events. It never
// blocks: it waits with a zero timeout and stops at ERROR_TIMEOUT.
func (x *xidEvents) drain(devices []*device, at time.Time, events []gpu.Event) []gpu.Event {
	if x.registered == 0 {
		return events
	}
	for range maxEventsPerSample {
		data, ret := x.set.Wait(0)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_TIMEOUT:
			return events
		default:
			if !x.warned {
				x.warned = true
				x.log.Warn("reading NVML events failed; XID errors may be missed", "err", ret.Error())
			}
			return events
		}
		if data.EventType != gonvml.EventTypeXidCriticalError {
			continue
		}
		events = append(events, xidEvent(deviceOf(devices, data.Device), data.EventData, at))
	}
	x.log.Warn("more NVML events than one sample drains; the rest wait for the next sample", "drained", maxEventsPerSample)
	return events
}

// free releases the event set.
func (x *xidEvents) free() error {
	if ret := x.set.Free(); ret != gonvml.SUCCESS {
		return callError("freeing the event set", ret)
	}
	return nil
}

// deviceOf finds the device an event came from: by handle, or by UUID when
// the handle is not one the sampler holds. It returns nil when neither works.
func deviceOf(devices []*device, h gonvml.Device) *device {
	if h == nil {
		return nil
	}
	// Comparing interfaces whose dynamic type is not comparable panics.
	if reflect.TypeOf(h).Comparable() {
		for _, d := range devices {
			if d.ready && d.handle == h {
				return d
			}
		}
	}
	uuid, ret := h.GetUUID()
	if ret != gonvml.SUCCESS {
		return nil
	}
	for _, d := range devices {
		if d.ready && d.uuid == uuid {
			return d
		}
	}
	return nil
}

// xidEvent describes XID code on d (nil when the GPU is unknown).
func xidEvent(d *device, code uint64, at time.Time) gpu.Event {
	ev := gpu.Event{Time: at, Kind: gpu.EventXID, GPU: -1, XID: code}
	where := "an unknown GPU"
	if d != nil {
		ev.GPU, ev.UUID = d.index, d.uuid
		where = fmt.Sprintf("GPU %d (%s)", d.index, d.uuid)
	}
	ev.Detail = fmt.Sprintf("XID %d on %s: %s", code, where, xidMeaning(code))
	return ev
}

// xidMeaning explains the common XID codes, after NVIDIA's XID catalogue.
func xidMeaning(code uint64) string {
	switch code {
	case 8:
		return "GPU stopped processing"
	case 13:
		return "graphics engine exception, usually an application error (e.g. out-of-range memory access)"
	case 31:
		return "GPU memory page fault, usually an application error"
	case 32:
		return "invalid or corrupted push buffer stream"
	case 38:
		return "driver firmware error"
	case 43:
		return "GPU stopped processing (the application was stopped)"
	case 45:
		return "preemptive cleanup after previous errors"
	case 48:
		return "double-bit ECC error: uncorrectable memory error"
	case 61:
		return "internal micro-controller breakpoint or warning"
	case 62:
		return "internal micro-controller halt"
	case 63:
		return "ECC page retirement or row remapping recorded"
	case 64:
		return "ECC page retirement or row remapping failed to record"
	case 68:
		return "video processor exception"
	case 69:
		return "graphics engine class error"
	case 74:
		return "NVLink error"
	case 79:
		return "GPU has fallen off the bus"
	case 92:
		return "high single-bit ECC error rate"
	case 94:
		return "contained ECC error: the affected application must restart"
	case 95:
		return "uncontained ECC error: the GPU must be reset"
	case 109:
		return "context switch timeout"
	case 119:
		return "GSP RPC timeout"
	case 120:
		return "GSP error"
	}
	return "see https://docs.nvidia.com/deploy/xid-errors/ for this code"
}
