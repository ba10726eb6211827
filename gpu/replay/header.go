package replay

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// column is one header column: what it holds, its name (for messages) and
// how to read its values.
type column struct {
	kind  colKind
	name  string // the label without its unit: "memory.used"
	label string // as written: "memory.used [MiB]"
	scale uint64 // memory: bytes in one unit of the values without a unit
	// factor turns a reading into gpuwatch's unit: 100 for GPUtil's load
	// (a fraction), 0.001 for milliwatts; 0 means 1.
	factor float64
	gpu    int // the GPU of a per-GPU column (nvitop, "gpu0_util"); -1 for the row's GPU
	// shadowed says that another column holds the same reading and is
	// read instead (power.draw over power.draw.average, nvitop's mean over
	// its max).
	shadowed bool
	// unitless says that the column's values must carry a memory unit: its
	// name is vague (vagueMemory) and its header names no unit.
	unitless bool
	// twin, when above 0, says that the column repeats the column at that
	// place (1-based), as a --query-gpu list that asks for a field twice:
	// it is not read, but its values must be the same.
	twin int
	// health is the health reading of a colHealth column; bit, when set,
	// the clock event reason it says is active or not.
	health gpu.HealthReading
	bit    gpu.ClockEvents
}

// header is the parsed header line of a CSV log.
type header struct {
	cols []column
	raw  []byte // the header line as written, to recognise a reprint cheaply
	has  [numKinds]bool
	// gpus are the GPUs of a wide layout, which has a column per GPU and
	// reading ("gpu0_util, gpu1_util"), in the order of their first column;
	// nil when a row is one GPU.
	gpus []int
	// known counts the columns read; ignored names the others.
	known   int
	ignored []string
	// twins counts the columns that repeat another (column.twin).
	twins int
	// gpuz says that the header is a GPU-Z sensor log's, which is of one
	// GPU (see gpuz.go).
	gpuz bool
}

// errNoColumn says that a line is not a header.
const errNoColumn = "no column of this line is one gpuwatch reads"

// parseHeader parses a CSV header line: nvidia-smi's (--format=csv) or a
// script's. Columns may come in any order and any subset; unknown columns
// are ignored. A line with no column gpuwatch reads is not a header.
func parseHeader(line []byte) (header, *fieldError) {
	h := header{raw: bytes.Clone(line)}
	type choice struct{ at, rank, agg int }
	chosen := map[[2]int]choice{} // by kind and GPU
	seen := make(map[string]int)
	pos := 0
	for n := 0; ; n++ {
		field, next := nextField(line, pos)
		start := pos + leadingSpace(field)
		label := string(trimSpace(unquote(field)))
		name, unit := cutUnit(label)
		cn := normalizeName(label)
		kind, rank := lookupColumn(cn)
		col := column{kind: kind, name: strings.ToLower(name), label: label, gpu: cn.gpu}
		if kind == colHealth {
			hc := healthColumns()[cn.key]
			col.health, col.bit = hc.reading, hc.bit
		}
		if first, dup := seen[label]; dup && kind != colIgnore {
			col.kind, col.shadowed, col.twin = colIgnore, true, first
			h.twins++
			kind = colIgnore
		}
		if kind != colIgnore {
			seen[label] = n + 1
			if ferr := col.setUnit(cn, unit, start+1); ferr != nil {
				return header{}, ferr
			}
			k := [2]int{int(kind), cn.gpu}
			if kind == colHealth { // each reading and reason a column of its own
				k[0] = int(numKinds) + int(col.health)<<16 + int(col.bit)
			}
			if prev, ok := chosen[k]; !ok || rank < prev.rank || rank == prev.rank && cn.agg < prev.agg {
				if ok {
					h.cols[prev.at].kind, h.cols[prev.at].shadowed = colIgnore, true
				}
				chosen[k] = choice{n, rank, cn.agg}
			} else {
				col.kind, col.shadowed = colIgnore, true
			}
		}
		h.cols = append(h.cols, col)
		if next < 0 {
			break
		}
		pos = next
	}
	for i := range h.cols {
		c := &h.cols[i]
		if c.kind == colIgnore {
			if c.label != "" && !c.shadowed {
				h.ignored = append(h.ignored, c.label)
			}
			continue
		}
		h.known++
		h.has[c.kind] = true
		if c.gpu >= 0 && !slices.Contains(h.gpus, c.gpu) {
			h.gpus = append(h.gpus, c.gpu)
		}
	}
	if h.known == 0 {
		return header{}, &fieldError{1, errNoColumn}
	}
	h.gpuz = isGPUZHeader(&h)
	return h, nil
}

// count fills in has and known from the columns, for a header made of
// another's columns.
func (h *header) count() {
	h.has, h.known = [numKinds]bool{}, 0
	for i := range h.cols {
		if k := h.cols[i].kind; k != colIgnore {
			h.has[k] = true
			h.known++
		}
	}
}

// setUnit sets how the column's values are read from the unit its label
// names (the brackets or the name's suffix). Memory without a unit is in
// MiB, as nvidia-smi writes it.
func (c *column) setUnit(cn columnName, written string, col int) *fieldError {
	unit := cn.unit
	switch {
	case c.kind.isMemory():
		c.scale = 1 << 20
		c.unitless = unit == "" && vagueMemory(cn.key)
		if unit != "" {
			s, ok := memoryScale([]byte(unit))
			if !ok {
				return &fieldError{col, fmt.Sprintf(
					"column %q has unknown memory unit %q; want MiB (as nvidia-smi writes it), KiB, GiB or B",
					c.label, cmp.Or(written, unit))}
			}
			c.scale = s
		}
	case c.kind == colPower && (unit == "mW" || unit == "milliwatts"):
		c.factor = 0.001
	case c.kind == colUtilGPU && cn.key == "load":
		c.factor = 100 // GPUtil's load is a fraction
	}
	return nil
}

// unquote drops the double quotes around a CSV field ("memory.used"), as
// Python's csv module and spreadsheets may write them.
func unquote(b []byte) []byte {
	t := trimSpace(b)
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		return t[1 : len(t)-1]
	}
	return b
}

// sameColumns reports whether two headers describe the same columns.
func (h *header) sameColumns(o *header) bool {
	return slices.Equal(h.cols, o.cols)
}

// ErrColumns is the error of Options.Columns that name no column gpuwatch
// reads.
var ErrColumns = errors.New("none of these is a column gpuwatch reads")

// CheckColumns returns an error wrapping ErrColumns when names, the value
// of Options.Columns, names no column gpuwatch reads.
func CheckColumns(names string) error {
	_, err := headerFromColumns(names)
	return err
}

// headerFromColumns makes the header of a log without one
// (--format=csv,noheader) from the names given on the command line:
// "timestamp,index,memory.used,memory.total".
func headerFromColumns(names string) (header, error) {
	h, ferr := parseHeader([]byte(names))
	if ferr != nil {
		return header{}, fmt.Errorf("%q: %w; name the --query-gpu fields, as in timestamp,index,memory.used,memory.total", names, ErrColumns)
	}
	h.raw = nil
	return h, nil
}
