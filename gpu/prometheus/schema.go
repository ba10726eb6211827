package prometheus

import (
	"fmt"
	"slices"
	"strings"
)

// Schema says which exporter's series a hub reads.
type Schema string

// The schemas.
const (
	// SchemaGPUWatch reads gpuwatch agents' own /metrics: per-GPU series
	// labelled gpu, uuid, name and host.
	SchemaGPUWatch Schema = "gpuwatch"
	// SchemaDCGM reads NVIDIA dcgm-exporter's DCGM_FI_DEV_* series,
	// labelled gpu, UUID, modelName and Hostname (else the host is the
	// instance label), and pod, namespace, container on Kubernetes.
	SchemaDCGM Schema = "dcgm"
	// SchemaAuto reads both; a GPU both report is read from gpuwatch's.
	SchemaAuto Schema = "auto"
)

// Schemas are the schema names a config may give.
func Schemas() []string {
	return []string{string(SchemaGPUWatch), string(SchemaDCGM), string(SchemaAuto)}
}

// ParseSchema checks a schema name; "" is SchemaAuto.
func ParseSchema(name string) (Schema, error) {
	if name == "" {
		return SchemaAuto, nil
	}
	if !slices.Contains(Schemas(), name) {
		return "", fmt.Errorf("schema %q is not one of %s", name, strings.Join(Schemas(), ", "))
	}
	return Schema(name), nil
}

// family is one series family a schema reads and what it says of a GPU.
type family struct {
	name   string
	schema Schema // SchemaGPUWatch or SchemaDCGM
	apply  func(d *deviceBuild, v float64)
}

// The series families gpuwatch reads. Counters and per-process or
// per-user series are handled apart (see deviceBuild.add); their apply is
// nil.
const (
	gwInfo          = "gpuwatch_gpu_info"
	gwLost          = "gpuwatch_gpu_lost"
	gwXID           = "gpuwatch_gpu_xid_errors_total"
	gwProcessMemory = "gpuwatch_gpu_process_memory_bytes"
	gwUserMemory    = "gpuwatch_gpu_user_memory_bytes"
	gwMIGInfo       = "gpuwatch_gpu_mig_info"
	dcgmXID         = "DCGM_FI_DEV_XID_ERRORS"
)

// mib is a dcgm-exporter memory unit.
const mib = 1 << 20

var families = []family{
	{gwInfo, SchemaGPUWatch, func(*deviceBuild, float64) {}},
	{gwLost, SchemaGPUWatch, func(d *deviceBuild, v float64) { d.lost = v == 1 }},
	{"gpuwatch_gpu_memory_used_bytes", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.memUsed = v }},
	{"gpuwatch_gpu_memory_total_bytes", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.memTotal = v }},
	{"gpuwatch_gpu_utilization_ratio", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.dev.UtilGPU = 100 * v }},
	{"gpuwatch_gpu_memory_utilization_ratio", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.dev.UtilMem = 100 * v }},
	{"gpuwatch_gpu_temperature_celsius", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.dev.TempC = v }},
	{"gpuwatch_gpu_power_watts", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.dev.PowerW = v }},
	{"gpuwatch_gpu_power_limit_watts", SchemaGPUWatch, func(d *deviceBuild, v float64) { d.dev.PowerLimitW = v }},
	{gwXID, SchemaGPUWatch, nil},
	{gwProcessMemory, SchemaGPUWatch, nil},
	{gwUserMemory, SchemaGPUWatch, nil},
	{gwMIGInfo, SchemaGPUWatch, nil},
	{"gpuwatch_gpu_mig_enabled", SchemaGPUWatch, func(d *deviceBuild, _ float64) { d.dev.MIGEnabled = true }},

	{"DCGM_FI_DEV_FB_USED", SchemaDCGM, func(d *deviceBuild, v float64) { d.memUsed = v * mib }},
	{"DCGM_FI_DEV_FB_FREE", SchemaDCGM, func(d *deviceBuild, v float64) { d.memFree = v * mib }},
	{"DCGM_FI_DEV_FB_RESERVED", SchemaDCGM, func(d *deviceBuild, v float64) { d.memReserved = v * mib }},
	{"DCGM_FI_DEV_GPU_UTIL", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.UtilGPU = v }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.UtilMem = v }},
	{"DCGM_FI_DEV_GPU_TEMP", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.TempC = v }},
	{"DCGM_FI_DEV_POWER_USAGE", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.PowerW = v }},
	{"DCGM_FI_DEV_POWER_MGMT_LIMIT", SchemaDCGM, func(d *deviceBuild, v float64) { d.dev.PowerLimitW = v }},
	// The graphics engine's activity (0–1): a MIG instance's utilization,
	// which DCGM_FI_DEV_GPU_UTIL does not give.
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", SchemaDCGM, func(d *deviceBuild, v float64) { d.engineActive = 100 * v }},
	{"DCGM_FI_PROF_DRAM_ACTIVE", SchemaDCGM, func(d *deviceBuild, v float64) { d.dramActive = 100 * v }},
	{dcgmXID, SchemaDCGM, nil},
}

// familiesOf indexes the families schema s reads by name.
func familiesOf(s Schema) map[string]*family {
	all := allFamilies()
	m := make(map[string]*family, len(all))
	for i := range all {
		if f := &all[i]; s == SchemaAuto || f.schema == s {
			m[f.name] = f
		}
	}
	return m
}

// backfillGroups are the series names schema s reads, grouped as a
// backfill asks for them: a range query for each family of memory,
// utilization, temperature and power, one for all the rest (the health
// readings, dcgm-exporter 4.9's names), which most fleets do not have.
func (s Schema) backfillGroups() [][]string {
	var groups [][]string
	var rest []string
	for _, name := range s.names() {
		if containsFamily(families, name) {
			groups = append(groups, []string{name})
		} else {
			rest = append(rest, name)
		}
	}
	if len(rest) > 0 {
		groups = append(groups, rest)
	}
	return groups
}

// names are the series names schema s reads, in a fixed order.
func (s Schema) names() []string {
	var out []string
	for _, f := range allFamilies() {
		if s == SchemaAuto || f.schema == s {
			out = append(out, f.name)
		}
	}
	return out
}
