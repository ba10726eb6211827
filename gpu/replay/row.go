package replay

import (
	"bytes"
	"fmt"
	"math"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// parseRow parses one data row into r.row, r.rowNS and r.rowTSCol.
func (r *Reader) parseRow(line []byte) *fieldError {
	cols := r.hdr.cols
	if n := bytes.Count(line, []byte{','}) + 1; n != len(cols) {
		return fieldCountError(line, n, len(cols))
	}
	nan := math.NaN()
	d := &r.row
	*d = gpu.Device{UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}
	var (
		used, total, free          uint64
		haveUsed, haveTot, haveFre bool
		uuidCol                    int
		uuidRaw                    []byte
		ferr                       *fieldError
	)
	pos := 0
	for i := range cols {
		for pos < len(line) && (line[pos] == ' ' || line[pos] == '\t') {
			pos++
		}
		start := pos
		pos = indexComma(line, pos)
		v := trimSpace(line[start:pos])
		col := start + 1
		pos++
		c := &cols[i]
		switch c.kind {
		case colIgnore:
		case colTimestamp:
			t, ok := r.tp.parse(v)
			if !ok {
				return &fieldError{col, fmt.Sprintf("timestamp: %q is not a time; want nvidia-smi's %q or RFC 3339",
					v, "2026/11/29 09:00:00.000")}
			}
			r.rowNS, r.rowTSCol = t, col
		case colIndex:
			n, ok := digits(v)
			if !ok {
				return &fieldError{col, fmt.Sprintf("index: %q is not a GPU index; want a whole number such as 0", v)}
			}
			d.Index = n
		case colUUID:
			uuidCol, uuidRaw = col, v
			if !isUnknown(v) {
				d.UUID = r.intern(&r.recentUUIDs, v)
			}
		case colName:
			if !isUnknown(v) {
				d.Name = r.intern(&r.recentNames, v)
			}
		case colTemp:
			d.TempC, ferr = reading(c, col, v, "C", "36")
		case colUtilGPU:
			d.UtilGPU, ferr = reading(c, col, v, "%", "71 %")
		case colUtilMem:
			d.UtilMem, ferr = reading(c, col, v, "%", "43 %")
		case colPower:
			d.PowerW, ferr = reading(c, col, v, "W", "60.81 W")
		case colPowerLimit:
			d.PowerLimitW, ferr = reading(c, col, v, "W", "700.00 W")
		case colMemUsed:
			used, haveUsed, ferr = memory(c, col, v)
		case colMemTotal:
			total, haveTot, ferr = memory(c, col, v)
		case colMemFree:
			free, haveFre, ferr = memory(c, col, v)
		}
		if ferr != nil {
			return ferr
		}
	}
	if !r.hdr.has[colIndex] {
		if d.UUID == "" {
			return &fieldError{uuidCol, fmt.Sprintf(
				"uuid: %q does not name a GPU, and without an index column the uuid is what tells GPUs apart; add index to the nvidia-smi --query-gpu list",
				uuidRaw)}
		}
		idx, ok := r.uuidIndex[d.UUID]
		if !ok {
			idx = len(r.uuidIndex)
			r.uuidIndex[d.UUID] = idx
		}
		d.Index = idx
	}
	// memory.used and memory.total determine each other with memory.free
	// (up to the driver's reserved memory, which nvidia-smi counts in
	// neither). Memory is known (MemTotal > 0) only when both are; a
	// MemUsed without MemTotal is kept for display, never a total without
	// MemUsed, which would read as an empty GPU.
	if !haveUsed && haveTot && haveFre && free <= total {
		used, haveUsed = total-free, true
	}
	if !haveTot && haveUsed && haveFre && used <= math.MaxUint64-free {
		total, haveTot = used+free, true
	}
	if haveUsed {
		d.MemUsed = used
		if haveTot {
			d.MemTotal = total
		}
	}
	return nil
}

// fieldCountError explains a row with n fields where the header has want.
func fieldCountError(line []byte, n, want int) *fieldError {
	col := len(line) + 1
	hint := "the row is cut short (was the log still being written?)"
	if n > want {
		hint = "a value contains a comma or the row belongs to another header"
		pos := 0
		for range want {
			_, pos = nextField(line, pos)
		}
		col = pos + leadingSpace(line[pos:]) + 1
	}
	return &fieldError{col, fmt.Sprintf("row has %d fields, the header has %d: %s; fix or delete the row, or skip bad rows",
		n, want, hint)}
}

// intern returns b as a string, the same string for the same bytes, so the
// names and UUIDs of thousands of snapshots share memory and compare fast.
// The strings seen last are tried before the map: a log cycles through the
// same few GPUs, and comparing is cheaper than hashing.
func (r *Reader) intern(recent *[numRecent]string, b []byte) string {
	for _, s := range recent {
		if s == string(b) {
			return s
		}
	}
	s, ok := r.strs[string(b)]
	if !ok {
		s = string(b)
		if len(r.strs) < maxInterned {
			r.strs[s] = s
		}
	}
	copy(recent[1:], recent[:numRecent-1])
	recent[0] = s
	return s
}
