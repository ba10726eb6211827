package prometheus

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/healthseries"
)

// dcgm-exporter's series as 4.9 renamed them (DCGM 4.7's field naming
// standard, with SI units: bytes, a 0–1 ratio), and its count of XIDs by
// code within a window, which both generations export.
const (
	dcgm49XID        = healthseries.DCGM49LastXID
	dcgmXIDCount     = healthseries.DCGMXIDCount
	dcgm49FBUsed     = "DCGM_FI_DEV_FB_USED_BYTES"
	dcgm49FBFree     = "DCGM_FI_DEV_FB_FREE_BYTES"
	dcgm49FBReserved = "DCGM_FI_DEV_FB_RESERVED_BYTES"
	dcgm49FBCapacity = "DCGM_FI_DEV_FB_CAPACITY_BYTES"
)

// allFamilies are the families of every schema: the readings of memory,
// utilization, temperature and power (families), dcgm-exporter 4.9's
// renames of them, and every health reading of the agents and of
// dcgm-exporter's two generations.
func allFamilies() []family {
	out := append([]family(nil), families...)
	out = append(out,
		family{dcgm49FBUsed, SchemaDCGM, func(d *deviceBuild, v float64) { d.memUsed = v }},
		family{dcgm49FBFree, SchemaDCGM, func(d *deviceBuild, v float64) { d.memFree = v }},
		family{dcgm49FBReserved, SchemaDCGM, func(d *deviceBuild, v float64) { d.memReserved = v }},
		family{dcgm49FBCapacity, SchemaDCGM, func(d *deviceBuild, v float64) { d.memTotal = v }},
		family{"DCGM_FI_DEV_GPU_UTIL_RATIO", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.UtilGPU = 100 * v }},
		family{"DCGM_FI_DEV_GPU_TEMP_CELSIUS", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.TempC = v }},
		family{"DCGM_FI_DEV_BOARD_POWER_WATTS", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.PowerW = v }},
		family{"DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.PowerLimitW = v }},
		family{dcgm49XID, SchemaDCGM, nil},
		family{dcgmXIDCount, SchemaDCGM, nil},
	)
	for _, s := range healthseries.All() {
		out = append(out, family{s.Name, SchemaGPUWatch, setHealth(s.Reading, s.Scale, false)})
		for _, f := range s.DCGM {
			if !containsFamily(out, f.Name) {
				out = append(out, family{f.Name, SchemaDCGM, setHealth(s.Reading, f.Scale, f.Sum)})
			}
		}
	}
	return out
}

// containsFamily reports whether fs has a family called name.
func containsFamily(fs []family, name string) bool {
	for _, f := range fs {
		if f.name == name {
			return true
		}
	}
	return false
}

// setHealth applies a series of reading r, in r's unit × scale; sum adds
// it to the reading (NVLink's flit and data CRC errors make one count).
func setHealth(r gpu.HealthReading, scale float64, sum bool) func(d *deviceBuild, v float64) {
	return func(d *deviceBuild, v float64) {
		if !finite(v) {
			return
		}
		v /= scale
		if prev, ok := d.dev.Health.Get(r); ok && sum {
			v += prev
		}
		d.dev.Health.Set(r, v)
	}
}

// xidCount is dcgm-exporter's count of one XID code within a window.
type xidCount struct {
	code   uint64
	value  float64
	window time.Duration
}

// addXIDCount notes a DCGM_EXP_XID_ERRORS_COUNT series of the GPU.
func (d *deviceBuild) addXIDCount(ls *labelSet, v float64) {
	code, err := strconv.ParseUint(ls.xid, 10, 32)
	ms, werr := strconv.ParseFloat(ls.window, 64)
	if err != nil || werr != nil || !(ms > 0) || !finite(v) {
		return
	}
	d.xidCounts = append(d.xidCounts, xidCount{code: code, value: v, window: time.Duration(ms * float64(time.Millisecond))})
}

// countKey identifies an XID count series across evaluations.
type countKey struct {
	dev  deviceKey
	code uint64
}

// countEvents are the XID errors a GPU's windowed counts say happened
// since the last evaluation: a count above the events this source already
// saw within the window is that many new ones, each then remembered at
// this evaluation's time for the window's length. On a GPU seen for the
// first time (known false) the count is the baseline, not news. The count
// is exact while no XID leaves the window between two evaluations as
// another comes: a window longer than the rules look back (an hour or
// more: dcgm-exporter's --xid-count-window-size) keeps it so.
func (b *builder) countEvents(at time.Time, d *deviceBuild, known bool) []gpu.Event {
	var out []gpu.Event
	for _, c := range d.xidCounts {
		key := countKey{dev: d.key, code: c.code}
		seen := b.xidTimes[key]
		for len(seen) > 0 && !seen[0].After(at.Add(-c.window)) {
			seen = seen[1:]
		}
		if n := int(c.value); n < len(seen) {
			// Fewer than seen: some left the window earlier than this
			// source's times for them say, or the exporter restarted.
			seen = seen[len(seen)-n:]
		}
		news := int(c.value) - len(seen)
		for range max(news, 0) {
			seen = append(seen, at)
			if known {
				info, _ := gpu.LookupXID(c.code)
				out = append(out, gpu.Event{Time: at, Kind: gpu.EventXID, GPU: d.dev.Index, UUID: d.dev.UUID, XID: c.code,
					Detail: fmt.Sprintf("%s counts %g XID %d in %v: %s", dcgmXIDCount, c.value, c.code, c.window, info.Text())})
			}
		}
		if len(seen) == 0 {
			delete(b.xidTimes, key)
		} else {
			b.xidTimes[key] = seen
		}
	}
	return out
}
