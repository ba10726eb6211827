package promexport

import (
	"fmt"
	"strings"

	"github.com/gpuwatch/gpuwatch/rules"
)

// Schema names the series the exported rules read: gpuwatch agents' own
// /metrics, or NVIDIA dcgm-exporter's DCGM_FI_DEV_* series.
type Schema string

// The schemas.
const (
	SchemaGPUWatch Schema = "gpuwatch"
	SchemaDCGM     Schema = "dcgm"
)

// ParseSchema checks a schema name.
func ParseSchema(name string) (Schema, error) {
	switch s := Schema(name); s {
	case SchemaGPUWatch, SchemaDCGM:
		return s, nil
	}
	return "", fmt.Errorf("schema %q is not gpuwatch or dcgm", name)
}

// gpuLabels are the labels every exported series and alert is about: one
// GPU of one host, as gpuwatch's own alerts are. A MIG instance is a GPU
// of its own: a gpuwatch agent's by its own uuid; dcgm-exporter's, which
// names it after its GPU (UUID) and its GPU instance (GPU_I_ID), by the
// uuid gpuwatch's hub gives it (MIG-<GPU's UUID>/<GPU instance>/0), with
// its gpu_instance and mig_profile.
func (s schema) gpuLabels() string {
	if s.name == SchemaDCGM {
		return "host, gpu, uuid, gpu_instance, mig_profile"
	}
	return "host, gpu, uuid"
}

// mib is dcgm-exporter's memory unit.
const mib = 1 << 20

// heldBytes is how much memory in use above a GPU's resting level makes it
// held (rules.Held); the resting level is at most gpu.RestingMax.
const heldBytes = 1 << 30

// oomLikelyPercent is how full a GPU whose job left it must have been for
// the exit to be a likely CUDA out-of-memory (rules.Exit).
const oomLikelyPercent = 95

// formKind says how a metric is computed from the series.
type formKind int

const (
	// formRaw: scale × one series (+ offset): window functions apply to
	// the series itself.
	formRaw formKind = iota + 1
	// formScaled: memory.used_percent, 100 × memory.used / memory.total:
	// window functions scale memory.used's, as a GPU's total is constant.
	formScaled
	// formFree: memory.free, memory.total − memory.used.
	formFree
	// formDerived: an expression of several series; window functions take
	// a subquery of it.
	formDerived
	// formNone: the schema has no series for it.
	formNone
)

// form is how a schema computes one metric of the rule language, in its
// base unit, per GPU.
type form struct {
	kind   formKind
	series expr         // formRaw: the selector
	scale  float64      // formRaw: the series' unit in the metric's base unit
	offset expr         // formRaw: added per GPU, or none
	base   rules.Metric // formScaled: the metric it scales
	inst   expr         // formRaw, formDerived: the value now, labelled by gpuLabels
	why    string       // formNone: why it is not available
	note   string       // a caveat about the translation, for rules that read it
	// recorded: series is a recording rule of gpuwatch's, already
	// labelled by GPU.
	recorded bool
}

// schema writes the selectors and label mappings of one Schema.
type schema struct {
	name Schema
}

// sel is a selector of a family of the schema, with extra matchers.
// dcgm-exporter's memory of a MIG instance (GPU_I_ID set) is the
// instance's, as gpuwatch's hub reads it; its other readings of one are
// the card's (temperature, power) or 0 (DCGM_FI_DEV_GPU_UTIL is not
// measured per instance) and are left out: rules on utilization do not
// hold on an instance, as on the hub where it measures none.
func (s schema) sel(family string, matchers ...string) expr {
	if s.name == SchemaDCGM && !perInstance(family) {
		matchers = append([]string{`GPU_I_ID=""`}, matchers...)
	}
	if len(matchers) == 0 {
		return raw(family)
	}
	return raw(family + "{" + strings.Join(matchers, ", ") + "}")
}

// perGPU labels e by the GPU it is about (host, gpu, uuid) and nothing
// else, with more labels when given. dcgm-exporter's host is its Hostname
// label (hostname from dcgm-exporter 4 on), else the instance; its UUID is
// UUID.
func (s schema) perGPU(e expr, more ...string) expr {
	by := s.gpuLabels()
	if len(more) > 0 {
		by += ", " + strings.Join(more, ", ")
	}
	if s.name == SchemaDCGM {
		// Aggregated first: series that differ only in their name (once a
		// function drops it) or in labels left out would clash.
		inner := "Hostname, hostname, instance, gpu, UUID, GPU_I_ID, GPU_I_PROFILE"
		if len(more) > 0 {
			inner += ", " + strings.Join(more, ", ")
		}
		e = raw("max by (" + inner + ") (" + e.s + ")")
		e = call("label_replace", e, raw(`"host"`), raw(`"$1"`), raw(`"instance"`), raw(`"(.*)"`))
		e = call("label_replace", e, raw(`"host"`), raw(`"$1"`), raw(`"hostname"`), raw(`"(.+)"`))
		e = call("label_replace", e, raw(`"host"`), raw(`"$1"`), raw(`"Hostname"`), raw(`"(.+)"`))
		e = call("label_replace", e, raw(`"uuid"`), raw(`"$1"`), raw(`"UUID"`), raw(`"(.*)"`))
		// A MIG instance: its own uuid, its GPU instance and profile.
		e = call("label_join", e, raw(`"mig_key"`), raw(`"/"`), raw(`"UUID"`), raw(`"GPU_I_ID"`))
		e = call("label_replace", e, raw(`"uuid"`), raw(`"MIG-$1/$2/0"`), raw(`"mig_key"`), raw(`"(.+)/(.+)"`))
		e = call("label_replace", e, raw(`"gpu_instance"`), raw(`"$1"`), raw(`"GPU_I_ID"`), raw(`"(.*)"`))
		e = call("label_replace", e, raw(`"mig_profile"`), raw(`"$1"`), raw(`"GPU_I_PROFILE"`), raw(`"(.*)"`))
	}
	return raw("max by (" + by + ") (" + e.s + ")")
}

// The series families the schemas read.
const (
	gwInfo         = "gpuwatch_gpu_info"
	gwLost         = "gpuwatch_gpu_lost"
	gwMemUsed      = "gpuwatch_gpu_memory_used_bytes"
	gwMemTotal     = "gpuwatch_gpu_memory_total_bytes"
	gwUtil         = "gpuwatch_gpu_utilization_ratio"
	gwMemUtil      = "gpuwatch_gpu_memory_utilization_ratio"
	gwTemp         = "gpuwatch_gpu_temperature_celsius"
	gwPower        = "gpuwatch_gpu_power_watts"
	gwPowerLimit   = "gpuwatch_gpu_power_limit_watts"
	gwProcesses    = "gpuwatch_gpu_processes"
	gwProcessMem   = "gpuwatch_gpu_process_memory_bytes"
	gwXID          = "gpuwatch_gpu_xid_errors_total"
	dcgmFBUsed     = "DCGM_FI_DEV_FB_USED"
	dcgmFBFree     = "DCGM_FI_DEV_FB_FREE"
	dcgmFBReserved = "DCGM_FI_DEV_FB_RESERVED"
	dcgmUtil       = "DCGM_FI_DEV_GPU_UTIL"
	dcgmMemUtil    = "DCGM_FI_DEV_MEM_COPY_UTIL"
	dcgmTemp       = "DCGM_FI_DEV_GPU_TEMP"
	dcgmPower      = "DCGM_FI_DEV_POWER_USAGE"
	dcgmPowerLimit = "DCGM_FI_DEV_POWER_MGMT_LIMIT"
	dcgmXID        = "DCGM_FI_DEV_XID_ERRORS"
)

// rawForm is scale × the family's series.
func (s schema) rawForm(family string, scale float64) form {
	e := s.sel(family)
	inst := s.perGPU(e)
	if scale != 1 {
		inst = bin(number(scale), "*", inst)
	}
	return form{kind: formRaw, series: e, scale: scale, inst: inst}
}

// series is a family that holds a metric, scaled to the metric's unit.
type series struct {
	family string
	scale  float64
}

// rawMetrics are, per schema, the metrics that are one series.
var rawMetrics = map[Schema]map[rules.Metric]series{
	SchemaGPUWatch: {
		rules.MetricMemoryUsed: {gwMemUsed, 1}, rules.MetricMemoryTotal: {gwMemTotal, 1},
		rules.MetricUtilizationGPU: {gwUtil, 100}, rules.MetricUtilizationMemory: {gwMemUtil, 100},
		rules.MetricTemperature: {gwTemp, 1}, rules.MetricPower: {gwPower, 1}, rules.MetricProcessCount: {gwProcesses, 1},
	},
	SchemaDCGM: {
		rules.MetricMemoryUsed: {dcgmFBUsed, mib}, rules.MetricMemoryFree: {dcgmFBFree, mib},
		rules.MetricUtilizationGPU: {dcgmUtil, 1}, rules.MetricUtilizationMemory: {dcgmMemUtil, 1},
		rules.MetricTemperature: {dcgmTemp, 1}, rules.MetricPower: {dcgmPower, 1},
	},
}

// form returns how the schema computes metric m.
func (s schema) form(m rules.Metric) form {
	dcgm := s.name == SchemaDCGM
	// dcgm-exporter's memory in all is used + free + reserved (when it
	// reports reserved), as gpuwatch's hub reads it; its free is free +
	// reserved, what gpuwatch's total − used is.
	used := s.perGPU(s.sel(dcgmFBUsed))
	reserved := bin(number(mib), "*", bin(s.perGPU(s.sel(dcgmFBReserved)), "or", bin(raw("0"), "*", used)))
	if raw, ok := rawMetrics[s.name][m]; ok {
		f := s.rawForm(raw.family, raw.scale)
		if dcgm && m == rules.MetricMemoryFree {
			f.offset = reserved
			f.inst = bin(f.inst, "+", f.offset)
		}
		return f
	}
	power, limit, powerNote := gwPower, gwPowerLimit, ""
	if dcgm {
		power, limit = dcgmPower, dcgmPowerLimit
		powerNote = "power.percent reads " + dcgmPowerLimit + ", which dcgm-exporter exports only when its counters file lists it"
	}
	switch m {
	case rules.MetricMemoryFree:
		return form{kind: formFree}
	case rules.MetricMemoryUsedPercent:
		return form{kind: formScaled, base: rules.MetricMemoryUsed}
	case rules.MetricMemoryTotal: // dcgm
		return form{kind: formDerived, inst: bin(bin(number(mib), "*", join("+", used, s.perGPU(s.sel(dcgmFBFree)))), "+", reserved)}
	case rules.MetricPowerPercent:
		return form{kind: formDerived, note: powerNote,
			inst: bin(bin(raw("100"), "*", s.perGPU(s.sel(power))), "/", bin(s.perGPU(s.sel(limit)), ">", raw("0")))}
	case rules.MetricProcessMemory:
		if dcgm {
			return form{kind: formNone, why: "dcgm-exporter does not say how much memory a process holds"}
		}
		return form{kind: formDerived,
			inst: bin(s.perGPU(s.sel(gwProcessMem)), "or", bin(raw("0"), "*", bin(s.perGPU(s.sel(gwProcesses)), "==", raw("0")))),
			note: "process.memory reads " + gwProcessMem + ", which agents export with metrics: {per_process: true}; without it, a GPU that runs processes has no process.memory"}
	case rules.MetricProcessJobs:
		if dcgm {
			return form{kind: formDerived, inst: bin(raw("0"), "*", used),
				note: "dcgm-exporter does not say how much memory a process holds: process.jobs is 0, as on gpuwatch's hub"}
		}
		jobs := s.perGPU(bin(s.sel(gwProcessMem), ">", raw("0")), "container", "user", "command")
		return form{kind: formDerived,
			inst: bin(raw("count by ("+s.gpuLabels()+") ("+jobs.s+")"), "or", bin(raw("0"), "*", s.perGPU(s.sel(gwInfo)))),
			note: "process.jobs counts the containers, or users' commands, holding memory in " + gwProcessMem + " (agents export it with metrics: {per_process: true}; without it, 0), not Slurm jobs"}
	case rules.MetricProcessCount: // dcgm
		pods := s.perGPU(s.sel(dcgmFBUsed, `pod!=""`), "namespace", "pod")
		return form{kind: formDerived,
			inst: bin(raw("count by ("+s.gpuLabels()+") ("+pods.s+")"), "or", bin(raw("0"), "*", used)),
			note: "dcgm-exporter names the Kubernetes pod on a GPU, not its processes: process.count counts pods, as gpuwatch's hub does"}
	}
	if src, ok := m.HealthSource(); ok {
		return s.healthForm(m, src)
	}
	return form{kind: formNone, why: fmt.Sprintf("%s is not a reading of the series", m)}
}

// dcgmFamilies are the dcgm-exporter series the export reads: a GPU
// reports while any of them has a sample, as for gpuwatch's hub.
var dcgmFamilies = []string{dcgmFBUsed, dcgmFBFree, dcgmFBReserved, dcgmUtil, dcgmMemUtil, dcgmTemp, dcgmPower, dcgmPowerLimit, dcgmXID}

// perInstance reports whether dcgm-exporter's family is read of MIG
// instances too: their memory.
func perInstance(family string) bool {
	return family == dcgmFBUsed || family == dcgmFBFree || family == dcgmFBReserved
}

// dcgmAny selects every series of dcgmFamilies: of a MIG instance, its
// memory's.
func (s schema) dcgmAny() expr {
	names := make([]string, len(dcgmFamilies))
	for i, n := range dcgmFamilies {
		names[i] = strings.TrimPrefix(n, "DCGM_FI_DEV_")
	}
	return bin(s.sel("", `__name__=~"DCGM_FI_DEV_(`+strings.Join(names, "|")+`)"`), "or",
		raw(`{GPU_I_ID!="", __name__=~"DCGM_FI_DEV_FB_(USED|FREE|RESERVED)"}`))
}

// known is every GPU the series know of now: on a gpuwatch agent also a
// GPU it lost, which stops reporting readings.
func (s schema) known() expr {
	if s.name == SchemaDCGM {
		return s.perGPU(s.dcgmAny())
	}
	return s.perGPU(s.sel(gwInfo))
}

// reportedAt is, for every GPU reporting now, the time of its latest
// sample.
func (s schema) reportedAt() expr {
	if s.name == SchemaDCGM {
		stamps := make([]expr, len(dcgmFamilies))
		for i, f := range dcgmFamilies {
			stamps[i] = call("timestamp", s.sel(f))
		}
		return s.perGPU(join("or", stamps...))
	}
	return bin(s.perGPU(call("timestamp", s.sel(gwInfo))), "unless", s.perGPU(bin(s.sel(gwLost), "==", raw("1"))))
}

// xidEvents is the recording rule of the XID events since the previous
// evaluation, every interval: for gpuwatch agents, per GPU and code, how
// many; for dcgm-exporter, per GPU, the code of the latest.
func (s schema) xidEvents(interval string) (expr, string) {
	if s.name == SchemaDCGM {
		x := s.sel(dcgmXID)
		changed := bin(bin(x, "!=", raw(x.s+" offset "+interval)), "or", bin(x, "unless", raw(x.s+" offset "+interval)))
		return s.perGPU(bin(changed, ">", raw("0"))), "dcgm-exporter reports the code of the latest XID, not a count: an XID that repeats the code before it, or a second one within a scrape, is not seen"
	}
	c := s.sel(gwXID)
	prev := raw(c.s + " offset " + interval)
	return s.perGPU(bin(bin(bin(c, "-", prev), ">", raw("0")), "or", bin(c, "unless", prev)), "xid"), ""
}
