package replay

import (
	"bytes"
	"strings"
)

// detectLines is how many lines detection looks at, at most: enough for a
// date line, nvidia-smi's version banner and a table's heading.
const detectLines = 64

// Format names, for people.
const (
	formatCSV     = "nvidia-smi CSV"
	formatTable   = "nvidia-smi table"
	formatDmon    = "nvidia-smi dmon"
	formatGpustat = "gpustat"
)

// detect tells the format of a log from its first lines (never from its
// file's name) and returns the format, ready to read from the first line.
// A log that fits no format is a *ParseError that lists what was tried,
// or says what the file is when gpuwatch recognises it (recognise.go).
func detect(in *input) (format, string, error) {
	lines := in.lr.peekLines(detectLines)
	first, at := []byte(nil), 0 // the first line that is not blank or a date
	for i, line := range lines {
		t := trimSpace(stripEscapes(line))
		switch {
		case len(t) == 0:
			continue
		case isTableLine(t):
			return newTableFormat(in), formatTable, nil
		case isDmonHeader(t):
			return newDmonFormat(in), formatDmon, nil
		case isGpustatGPU(t):
			return newGpustatFormat(in), formatGpustat, nil
		case isAfterburnerLine(t):
			return newAfterburnerFormat(in), formatAfterburner, nil
		case isWatchTitle(t):
			continue
		}
		if in.tp.isDateLine(t) {
			continue
		}
		if isShellOutput(t) {
			continue
		}
		if first == nil {
			first, at = t, i+1
		}
		if isGpustatTitle(t) {
			continue // its GPUs' lines follow
		}
		break
	}
	for _, line := range lines {
		if in.tp.isDateLine(trimSpace(line)) {
			in.peekDated = true
			break
		}
	}
	if first == nil {
		if len(lines) == 0 || allBlank(lines) {
			return nil, "", &ParseError{in.lr.name, max(len(lines), 1), 1,
				"the log is empty; want a GPU log, such as nvidia-smi --query-gpu=timestamp,index,name,uuid,memory.used,memory.total --format=csv writes"}
		}
		first, at = trimSpace(lines[0]), 1
	}
	if what := recognise(lines); what != "" {
		return nil, "", notALog(in.lr.name, at, first, what)
	}
	if h, ferr := parseHeader(first); !looksLikeData(first) {
		switch {
		case ferr == nil && h.gpuz:
			return newCSVFormat(in, h), formatGPUZ, nil
		case ferr == nil:
			return newCSVFormat(in, h), formatCSV, nil
		case ferr.msg != errNoColumn:
			return nil, "", &ParseError{in.lr.name, at, ferr.col, ferr.msg} // a header, with a problem
		}
	}
	if bytes.IndexByte(first, ',') >= 0 && in.opts.Columns != "" {
		h, err := headerFromColumns(in.opts.Columns)
		if err != nil {
			return nil, "", err
		}
		return newColumnsFormat(in, h), formatCSV, nil
	}
	if h, ok := pipeHeader(first); ok {
		in.lr.pipes = true
		return newCSVFormat(in, h), formatCSV, nil
	}
	for _, line := range lines[at:] { // a log cut at its head (rotated, or its first lines lost)
		t := trimSpace(line)
		switch {
		case isTableLine(t):
			return newTableFormat(in), formatTable, nil
		case isDmonHeader(t):
			return newDmonFormat(in), formatDmon, nil
		}
	}
	if looksLikeTextLines(in.tp.loc, lines) {
		return newTextFormat(in), formatText, nil
	}
	if isAllocatorLog(bytes.Join(lines, []byte{'\n'})) {
		return nil, "", notALog(in.lr.name, at, first, allocatorLog)
	}
	if bytes.IndexByte(first, ',') >= 0 && looksLikeData(first) {
		return nil, "", &ParseError{in.lr.name, at, 1, "the first line is a data row, not a header: the log was written with " +
			"--format=csv,noheader; say which columns it has, in order, as in --columns timestamp,index,memory.used,memory.total " +
			"(the --query-gpu list that wrote it), or log again with --format=csv"}
	}
	return nil, "", notALog(in.lr.name, at, first, "")
}

// looksLikeData reports whether a CSV line starts with a value rather than
// a column name: a time or a number.
func looksLikeData(line []byte) bool {
	f := trimSpace(unquote(firstField(line)))
	if isTimestamp(f) {
		return true
	}
	_, ok := parseFloat(f)
	return ok || isUUID(f)
}

func allBlank(lines [][]byte) bool {
	for _, l := range lines {
		if len(trimSpace(l)) > 0 {
			return false
		}
	}
	return true
}

// isWatchTitle reports whether t is the title `watch` prints above what it
// runs: "Every 2.0s: nvidia-smi    node1: Sun Nov 29 09:00:00 2026".
func isWatchTitle(t []byte) bool {
	return bytes.HasPrefix(t, []byte("Every ")) && bytes.Contains(t, []byte("s: "))
}

// clip shortens a line for a message.
func clip(b []byte, n int) string {
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
