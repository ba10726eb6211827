package replay

import (
	"bytes"
	"fmt"
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
	colPower
	colPowerLimit
	numKinds
)

// column is one header column: what it holds, its name (for messages) and,
// for memory, the bytes in one unit of the header's unit.
type column struct {
	kind  colKind
	name  string // lower-case name without the unit: "memory.used"
	label string // as written: "memory.used [MiB]"
	scale uint64
}

// header is the parsed header line of a log.
type header struct {
	cols []column
	raw  []byte // the header line as written, to recognise a reprint cheaply
	has  [numKinds]bool
}

// columnKind maps an nvidia-smi --query-gpu field name to the reading it
// holds. Several names can fill one reading; the lower rank wins when a
// header has more than one of them. Known names that gpuwatch does not use
// (pci.bus_id) are ignored like unknown ones.
func columnKind(name string) (kind colKind, rank int) {
	switch name {
	case "timestamp":
		return colTimestamp, 0
	case "index":
		return colIndex, 0
	case "uuid", "gpu_uuid":
		return colUUID, 0
	case "name", "gpu_name":
		return colName, 0
	case "temperature.gpu":
		return colTemp, 0
	case "utilization.gpu":
		return colUtilGPU, 0
	case "utilization.memory":
		return colUtilMem, 0
	case "memory.used":
		return colMemUsed, 0
	case "memory.total":
		return colMemTotal, 0
	case "memory.free":
		return colMemFree, 0
	case "power.draw":
		return colPower, 0
	case "power.draw.instant":
		return colPower, 1
	case "power.draw.average":
		return colPower, 2
	case "enforced.power.limit":
		// The enforced limit is the one the GPU obeys (the lowest of all
		// limiters), so it beats the software power.limit.
		return colPowerLimit, 0
	case "power.limit":
		return colPowerLimit, 1
	}
	return colIgnore, 0
}

// memoryScale returns the bytes in one unit of a memory unit as nvidia-smi
// writes it.
func memoryScale(unit []byte) (uint64, bool) {
	switch string(unit) {
	case "MiB":
		return 1 << 20, true
	case "GiB":
		return 1 << 30, true
	case "KiB":
		return 1 << 10, true
	case "B":
		return 1, true
	case "TiB":
		return 1 << 40, true
	}
	return 0, false
}

// splitLabel splits a header label such as "memory.used [MiB]" into its name
// and unit ("memory.used", "MiB").
func splitLabel(label []byte) (name, unit []byte) {
	i := bytes.LastIndexByte(label, '[')
	if i < 0 || label[len(label)-1] != ']' {
		return label, nil
	}
	return trimSpace(label[:i]), trimSpace(label[i+1 : len(label)-1])
}

// parseHeader parses the header line nvidia-smi --format=csv writes. Columns
// may come in any order and any subset, but the log needs a timestamp and a
// way to tell GPUs apart (index or uuid).
func parseHeader(line []byte) (header, *fieldError) {
	h := header{raw: bytes.Clone(line)}
	ranks := [numKinds]int{}
	at := [numKinds]int{} // column position + 1 of the chosen column of each kind
	seen := make(map[string]int)
	pos := 0
	for n := 0; ; n++ {
		field, next := nextField(line, pos)
		start := pos + leadingSpace(field)
		label := trimSpace(field)
		name, unit := splitLabel(label)
		lname := strings.ToLower(string(name))
		col := column{name: lname, label: string(label)}
		kind, rank := columnKind(lname)
		if kind != colIgnore {
			if first, dup := seen[lname]; dup {
				return header{}, &fieldError{start + 1, fmt.Sprintf(
					"column %q appears twice (columns %d and %d); query each field once in nvidia-smi --query-gpu",
					lname, first, n+1)}
			}
			seen[lname] = n + 1
		}
		if kind >= colMemUsed && kind <= colMemFree {
			col.scale = 1 << 20
			if len(unit) > 0 {
				s, ok := memoryScale(unit)
				if !ok {
					return header{}, &fieldError{start + 1, fmt.Sprintf(
						"column %q has unknown memory unit %q; want MiB (as nvidia-smi writes it), KiB, GiB or B",
						label, unit)}
				}
				col.scale = s
			}
		}
		if kind != colIgnore {
			if prev := at[kind]; prev == 0 || rank < ranks[kind] {
				if prev != 0 {
					h.cols[prev-1].kind = colIgnore
				}
				at[kind], ranks[kind] = n+1, rank
				h.has[kind] = true
			} else {
				kind = colIgnore
			}
		}
		col.kind = kind
		h.cols = append(h.cols, col)
		if next < 0 {
			break
		}
		pos = next
	}
	if !h.has[colTimestamp] {
		msg := `header has no "timestamp" column; add timestamp to the nvidia-smi --query-gpu list`
		if isTimestamp(trimSpace(firstField(line))) {
			msg = "first line is a data row, not a header; the log was written with --format=csv,noheader: " +
				"add the header line, or log again with --format=csv"
		}
		return header{}, &fieldError{1, msg}
	}
	if !h.has[colIndex] && !h.has[colUUID] {
		return header{}, &fieldError{1,
			`header has neither "index" nor "uuid", so GPUs cannot be told apart; add index (or uuid) to the nvidia-smi --query-gpu list`}
	}
	return h, nil
}

// sameColumns reports whether two headers describe the same columns.
func (h *header) sameColumns(o *header) bool {
	if len(h.cols) != len(o.cols) {
		return false
	}
	for i := range h.cols {
		if h.cols[i] != o.cols[i] {
			return false
		}
	}
	return true
}
