package replay

import (
	"strconv"
	"strings"
)

// colKind says which reading a CSV column holds.
type colKind uint8

const (
	colIgnore colKind = iota
	colTimestamp
	colIndex
	colUUID
	colName
	colTemp
	colUtilGPU
	colUtilMem
	colMemUsed
	colMemTotal
	colMemFree
	colMemReserved
	colPower
	colPowerLimit
	colHealth // a health reading (column.health)
	numKinds
)

// isMemory reports whether the column holds an amount of memory.
func (k colKind) isMemory() bool { return k >= colMemUsed && k <= colMemReserved }

// columnNames maps the names of columns, as nvidia-smi --query-gpu and
// scripts (pynvml, GPUtil, nvitop, gpustat) write them, to the reading they
// hold. A name is looked up normalized (see normalizeName): lower case,
// words joined by "_", without its unit ("Memory Used (MiB)" and
// "memory.used [MiB]" are both memory_used). Several names can fill one
// reading; the lower rank wins when a header has more than one of them.
// ColumnNames (the table in the docs) lists the same names.
var columnNames = map[string]struct {
	kind colKind
	rank int
}{
	"timestamp": {colTimestamp, 0}, "time": {colTimestamp, 1}, "datetime": {colTimestamp, 1},
	"date_time": {colTimestamp, 1}, "ts": {colTimestamp, 1}, "time_stamp": {colTimestamp, 1},
	"epoch": {colTimestamp, 2}, "unix_time": {colTimestamp, 2}, "unixtime": {colTimestamp, 2}, "date": {colTimestamp, 3},

	"index": {colIndex, 0}, "gpu_index": {colIndex, 0}, "gpu_id": {colIndex, 1}, "gpuid": {colIndex, 1},
	"gpu": {colIndex, 1}, "id": {colIndex, 2}, "idx": {colIndex, 2}, "gpu_idx": {colIndex, 1},
	"device": {colIndex, 2}, "device_id": {colIndex, 2}, "device_index": {colIndex, 1}, "gpu_num": {colIndex, 1},
	"gpu_number": {colIndex, 1}, "gpu_no": {colIndex, 1}, "cuda": {colIndex, 2},

	"uuid": {colUUID, 0}, "gpu_uuid": {colUUID, 0},

	"name": {colName, 0}, "gpu_name": {colName, 0}, "model": {colName, 1}, "gpu_model": {colName, 1},
	"product_name": {colName, 1}, "device_name": {colName, 1}, "gpu_type": {colName, 2},

	"temperature_gpu": {colTemp, 0}, "temperature": {colTemp, 1}, "temp": {colTemp, 1}, "gpu_temp": {colTemp, 1},
	"gpu_temperature": {colTemp, 1}, "gtemp": {colTemp, 1}, "core_temp": {colTemp, 2},

	"utilization_gpu": {colUtilGPU, 0}, "gpu_util": {colUtilGPU, 1}, "gpu_utilization": {colUtilGPU, 1},
	"utilization": {colUtilGPU, 2}, "util": {colUtilGPU, 2}, "util_gpu": {colUtilGPU, 1}, "gpu_load": {colUtilGPU, 2},
	"load": {colUtilGPU, 3}, "gpu_usage": {colUtilGPU, 2}, "sm_util": {colUtilGPU, 2}, "gpu_busy": {colUtilGPU, 2},

	"utilization_memory": {colUtilMem, 0}, "memory_utilization": {colUtilMem, 1}, "mem_util": {colUtilMem, 1},
	"memory_util": {colUtilMem, 1}, "util_mem": {colUtilMem, 1}, "mem_utilization": {colUtilMem, 1},
	"memory_controller_load": {colUtilMem, 2}, "memory_controller_utilization": {colUtilMem, 2},

	"memory_used": {colMemUsed, 0}, "mem_used": {colMemUsed, 1}, "used_memory": {colMemUsed, 1},
	"vram_used": {colMemUsed, 1}, "gpu_mem_used": {colMemUsed, 1}, "gpu_memory_used": {colMemUsed, 1},
	"memoryused": {colMemUsed, 1}, "memused": {colMemUsed, 1}, "used_mem": {colMemUsed, 1}, "fb_used": {colMemUsed, 1},
	"fb": {colMemUsed, 2}, "memory_used_dedicated": {colMemUsed, 0}, "vram_used_dedicated": {colMemUsed, 1},
	// Names that say memory but not whether used or a share of it: read
	// only as amounts, with a memory unit (see vagueMemory).
	"memory": {colMemUsed, 3}, "mem": {colMemUsed, 3}, "vram": {colMemUsed, 3}, "gpu_memory": {colMemUsed, 3},
	"gpu_mem": {colMemUsed, 3}, "memory_usage": {colMemUsed, 3}, "mem_usage": {colMemUsed, 3}, "vram_usage": {colMemUsed, 3},
	"gpu_memory_usage": {colMemUsed, 3},

	"memory_total": {colMemTotal, 0}, "mem_total": {colMemTotal, 1}, "total_memory": {colMemTotal, 1},
	"vram_total": {colMemTotal, 1}, "gpu_mem_total": {colMemTotal, 1}, "gpu_memory_total": {colMemTotal, 1},
	"memorytotal": {colMemTotal, 1}, "memtotal": {colMemTotal, 1}, "total_mem": {colMemTotal, 1}, "fb_total": {colMemTotal, 1},

	"memory_free": {colMemFree, 0}, "mem_free": {colMemFree, 1}, "free_memory": {colMemFree, 1},
	"vram_free": {colMemFree, 1}, "gpu_mem_free": {colMemFree, 1}, "gpu_memory_free": {colMemFree, 1},
	"memoryfree": {colMemFree, 1}, "memfree": {colMemFree, 1}, "free_mem": {colMemFree, 1}, "fb_free": {colMemFree, 1},

	"memory_reserved": {colMemReserved, 0}, "mem_reserved": {colMemReserved, 1},

	"power_draw": {colPower, 0}, "power_draw_instant": {colPower, 1}, "power_draw_average": {colPower, 2},
	"power": {colPower, 1}, "pwr": {colPower, 1}, "power_usage": {colPower, 1}, "gpu_power": {colPower, 1},
	"power_consumption": {colPower, 2}, "power_used": {colPower, 2}, "board_power_draw": {colPower, 1},
	"gpu_power_draw": {colPower, 1},

	// The enforced limit is the one the GPU obeys (the lowest of all
	// limiters), so it beats the software power.limit.
	"enforced_power_limit": {colPowerLimit, 0}, "power_limit": {colPowerLimit, 1}, "power_cap": {colPowerLimit, 1},
	"powerlimit": {colPowerLimit, 1},
}

// ColumnNames returns, for each reading a CSV log can hold, the column names
// gpuwatch reads it from, as they look normalized (lower case, words
// joined by "_", the unit left out): the reading's name first.
func ColumnNames() map[string][]string {
	readings := map[colKind]string{
		colTimestamp: "timestamp", colIndex: "index", colUUID: "uuid", colName: "name",
		colTemp: "temperature.gpu", colUtilGPU: "utilization.gpu", colUtilMem: "utilization.memory",
		colMemUsed: "memory.used", colMemTotal: "memory.total", colMemFree: "memory.free",
		colMemReserved: "memory.reserved", colPower: "power.draw", colPowerLimit: "enforced.power.limit",
	}
	out := map[string][]string{}
	for name, c := range columnNames {
		out[readings[c.kind]] = append(out[readings[c.kind]], name)
	}
	return out
}

// aggregates rank the statistics nvitop's collector writes of each metric
// (".../memory_used (MiB)/mean"): the mean is read when there is one.
var aggregates = map[string]int{"mean": 0, "last": 1, "max": 2, "min": 3}

// unitSuffixes are the units scripts append to column names
// ("vram_used_mb", "gpu_util_percent", "power_w"), as the unit they mean.
var unitSuffixes = []struct{ suffix, unit string }{
	{"_mib", "MiB"}, {"_mb", "MiB"}, {"_gib", "GiB"}, {"_gb", "GiB"}, {"_kib", "KiB"}, {"_kb", "KiB"},
	{"_bytes", "B"}, {"_percent", "%"}, {"_pct", "%"}, {"_perc", "%"}, {"_celsius", "C"}, {"_degc", "C"},
	{"_c", "C"}, {"_watts", "W"}, {"_watt", "W"}, {"_mw", "mW"}, {"_w", "W"},
}

// columnName is a header label taken apart.
type columnName struct {
	key  string // normalized: "memory_used"
	unit string // as written in brackets, or from the name's suffix: "MiB"
	gpu  int    // the GPU a per-GPU column is about ("gpu0_util", nvitop's "gpu:0"); -1 for every GPU
	agg  int    // nvitop's statistic: the rank of mean, last, max, min
}

// normalizeName takes a header label apart: "Memory Used (MiB)" is
// memory_used in MiB; "gpu1_util_percent" is GPU 1's gpu_util in percent;
// nvitop's "train/cuda:0 (gpu:3)/memory_used (MiB)/mean" is GPU 3's
// memory_used in MiB, its mean.
func normalizeName(label string) columnName {
	n := columnName{gpu: -1}
	if strings.Contains(label, "/") {
		var ok bool
		if label, ok = n.perGPUPath(label); !ok {
			return columnName{gpu: -1}
		}
	}
	label, n.unit = cutUnit(strings.TrimSpace(label))
	key := make([]byte, 0, len(label))
	for i := 0; i < len(label); i++ {
		c := label[i]
		switch {
		case c >= 'A' && c <= 'Z':
			key = append(key, c+'a'-'A')
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			key = append(key, c)
		case c == '%':
			if n.unit == "" {
				n.unit = "%"
			}
		default:
			if len(key) > 0 && key[len(key)-1] != '_' {
				key = append(key, '_')
			}
		}
	}
	n.key = strings.TrimSuffix(string(key), "_")
	n.key, n.gpu = perGPUName(n.key, n.gpu)
	for _, s := range unitSuffixes {
		if k, ok := strings.CutSuffix(n.key, s.suffix); ok && k != "" {
			n.key = k
			if n.unit == "" {
				n.unit = s.unit
			}
			break
		}
	}
	return n
}

// perGPUPath reads nvitop's collector keys, "TAG/cuda:0 (gpu:3)/METRIC
// (UNIT)/mean": the GPU, the metric and its statistic. Keys of the host
// ("TAG/host/cpu_percent (%)/mean") name no GPU and are not read.
func (n *columnName) perGPUPath(label string) (string, bool) {
	parts := strings.Split(label, "/")
	for _, p := range parts {
		if strings.TrimSpace(p) == "host" {
			return "", false
		}
	}
	last := strings.TrimSpace(parts[len(parts)-1])
	if rank, ok := aggregates[last]; ok {
		n.agg = rank
		parts = parts[:len(parts)-1]
	}
	for i := len(parts) - 2; i >= 0; i-- {
		p := parts[i]
		at := strings.LastIndex(p, "gpu:")
		if at < 0 {
			continue
		}
		num := p[at+4:]
		if end := strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
			num = num[:end]
		}
		g, err := strconv.Atoi(num)
		if err != nil {
			return "", false
		}
		n.gpu = g
		return parts[i+1], true
	}
	// "timestamp" and "duration (s)" of the collector: the tag's, for every GPU.
	return parts[len(parts)-1], len(parts) > 1
}

// perGPUName reads a GPU in a normalized name: "gpu0_util", "gpu_1_mem_used",
// "util_gpu2".
func perGPUName(key string, gpu int) (string, int) {
	if gpu >= 0 {
		return key, gpu
	}
	for _, prefix := range []string{"gpu_", "gpu", "cuda_", "cuda"} {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			continue
		}
		num, metric, ok := strings.Cut(rest, "_")
		if g, err := strconv.Atoi(num); ok && err == nil && metric != "" && len(num) <= 3 {
			return metric, g
		}
	}
	if i := strings.LastIndex(key, "_gpu"); i > 0 {
		if g, err := strconv.Atoi(key[i+4:]); err == nil && len(key)-i-4 <= 3 {
			return key[:i], g
		}
	}
	return key, gpu
}

// cutUnit splits "memory.used [MiB]" or "Memory Used (MiB)" into the name
// and the unit.
func cutUnit(label string) (name, unit string) {
	if len(label) == 0 {
		return label, ""
	}
	open := byte('[')
	switch label[len(label)-1] {
	case ']':
	case ')':
		open = '('
	default:
		return label, ""
	}
	i := strings.LastIndexByte(label, open)
	if i < 0 {
		return label, ""
	}
	return strings.TrimSpace(label[:i]), strings.TrimSpace(label[i+1 : len(label)-1])
}

// lookupColumn returns the reading a normalized name holds, and its rank.
func lookupColumn(n columnName) (colKind, int) {
	c, ok := columnNames[n.key]
	if !ok {
		if _, health := healthColumns()[n.key]; health {
			return colHealth, 0
		}
		return colIgnore, 0
	}
	switch {
	case c.kind == colIndex && n.unit == "%":
		return colUtilGPU, 2 // "GPU %": a utilization, not an index
	case n.unit != "%" && !strings.HasPrefix(n.unit, "% "):
	case c.kind.isMemory(), c.kind == colPower, c.kind == colPowerLimit, c.kind == colTemp:
		return colIgnore, 0 // "memory_used_percent", GPU-Z's "Power Consumption (%) [% TDP]": a share, not an amount
	}
	return c.kind, c.rank
}

// vagueMemory reports whether a column's name says memory but not whether
// used or a share of it ("memory", "Memory usage"): its values are read
// only with a memory unit, in its header or in them.
func vagueMemory(key string) bool {
	c, ok := columnNames[key]
	return ok && c.kind == colMemUsed && c.rank == 3
}

// memoryScale returns the bytes in one unit of a memory unit. NVIDIA's
// tools write MiB as "MB" at times (dmon, GPUtil), and mean MiB.
func memoryScale(unit []byte) (uint64, bool) {
	switch string(unit) {
	case "MiB", "MB", "mib", "mb", "M":
		return 1 << 20, true
	case "GiB", "GB", "gib", "gb", "G":
		return 1 << 30, true
	case "KiB", "KB", "kib", "kb", "K":
		return 1 << 10, true
	case "B", "b", "bytes":
		return 1, true
	case "TiB", "TB":
		return 1 << 40, true
	}
	return 0, false
}
