package replay

import (
	"bytes"
	"fmt"
)

// Some files people take for GPU logs are not logs gpuwatch can replay:
// JSON, nvidia-smi's full report, a PyTorch allocator's log. The error for
// a file that fits no layout says what such a file is, why it cannot be
// read, and what to log instead.

// logAdvice is what to log instead.
const logAdvice = "log the GPUs with nvidia-smi --query-gpu=timestamp,index,name,memory.used,memory.total,utilization.gpu --format=csv -l 5"

// recognise names what the first lines of a file that is no GPU log are
// (JSON, XML, nvidia-smi -q's report, a binary file), and why it cannot be
// read; "" when it is nothing gpuwatch knows.
func recognise(lines [][]byte) string {
	var first []byte
	for _, l := range lines {
		if t := trimSpace(l); len(t) > 0 {
			first = t
			break
		}
	}
	head := bytes.Join(lines, []byte{'\n'})
	switch {
	case first == nil:
		return ""
	case bytes.IndexByte(head, 0) >= 0:
		return "a binary file, not text: gpuwatch replays logs written as text; " + logAdvice
	case first[0] == '{' || first[0] == '[' && (len(first) == 1 || bytes.IndexByte([]byte(`{["`), first[1]) >= 0):
		what := "a JSON file"
		switch {
		case bytes.Contains(head, []byte(`"query_time"`)) && bytes.Contains(head, []byte(`"gpus"`)):
			what = "gpustat --json's output"
		case bytes.Contains(head, []byte(`"nvidia_smi_log"`)):
			what = "nvidia-smi's report as JSON"
		}
		return what + ", which gpuwatch does not replay: it reads GPU logs as text lines and CSV; " +
			"log gpustat's text (gpustat >> gpu.log) or nvidia-smi's CSV instead (" + logAdvice + ")"
	case bytes.HasPrefix(first, []byte("<?xml")) || bytes.Contains(head, []byte("<nvidia_smi_log")):
		return "nvidia-smi -q -x's XML report, which gpuwatch does not replay: a report of one moment, not a log; " + logAdvice
	case bytes.Contains(head, []byte("NVSMI LOG")):
		return "nvidia-smi -q's report, which gpuwatch does not replay: a report of one moment, not a log; " + logAdvice
	}
	return ""
}

// allocatorLog says what a PyTorch allocator's log is, for a file that is
// one and no GPU log (a GPU log may have an allocator's column beside its
// readings, and is read).
const allocatorLog = "a PyTorch allocator's log (torch.cuda.memory_allocated, memory_reserved), which gpuwatch does not replay: " +
	"it counts one process's tensors, not the GPU's memory, and has no utilization; " + logAdvice + " beside it"

// isAllocatorLog reports whether text is a PyTorch allocator's log: its
// function names, its memory summary, or lines of allocated and reserved
// memory.
func isAllocatorLog(text []byte) bool {
	for _, w := range []string{"memory_allocated", "memory_reserved", "max_memory_allocated", "PyTorch CUDA memory summary",
		"memory_cached", "torch.cuda.memory"} {
		if bytes.Contains(text, []byte(w)) {
			return true
		}
	}
	lower := bytes.ToLower(text)
	return bytes.Contains(lower, []byte("allocated")) && (bytes.Contains(lower, []byte("reserved")) || bytes.Contains(lower, []byte("cached")))
}

// notALog is the error for a file that fits no layout, or is a file
// gpuwatch recognises and cannot read.
func notALog(name string, line int, first []byte, what string) *ParseError {
	if what != "" {
		return &ParseError{name, 1, 1, "this is " + what}
	}
	return &ParseError{name, line, 1, fmt.Sprintf("not a GPU log gpuwatch reads: %q is none of "+
		"a CSV header naming GPU readings (nvidia-smi --query-gpu=timestamp,index,memory.used,... --format=csv, or a script's, "+
		"as in \"timestamp, gpu_index, gpu_util, memory_used\", with commas or |), "+
		"a CSV row (a log without its header needs --columns), "+
		"nvidia-smi's table (+-----, | NVIDIA-SMI ...), nvidia-smi dmon's header (# gpu pwr gtemp ...), "+
		"gpustat's lines ([0] NVIDIA ... | 36°C, 0 %% | ...), a GPU-Z sensor log (Date, GPU Clock [MHz], ...), "+
		"an MSI Afterburner log (00, …, Hardware monitoring log), "+
		"or a script's lines with a time and named readings ([2026-11-29 09:00:00] GPU 0: Memory: 8595MB/24576MB, Utilization: 45%%)",
		clip(first, 60))}
}
