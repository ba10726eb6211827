package cli

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

func TestBar(t *testing.T) {
	tests := []struct {
		percent float64
		want    string
	}{
		{0, "[░░░░░░░░░░]"},
		{50, "[█████░░░░░]"},
		{54, "[█████░░░░░]"},
		{55, "[██████░░░░]"},
		{100, "[██████████]"},
		{150, "[██████████]"}, // never wider than the bar
		{-5, "[░░░░░░░░░░]"},
		{math.NaN(), "[??????????]"},
	}
	for _, tt := range tests {
		if got := bar(tt.percent, 10); got != tt.want {
			t.Errorf("bar(%v, 10): got %q, want %q", tt.percent, got, tt.want)
		}
	}
}

func TestPrintStatusUnknownReadings(t *testing.T) {
	nan := math.NaN()
	s := &gpu.Snapshot{
		Time: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC), Host: "h",
		Devices: []gpu.Device{{Index: 0, UUID: "GPU-x", Name: "Tesla T4",
			UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
	}
	var b strings.Builder
	printStatus(&b, s, time.UTC)
	for _, want := range []string{
		"h · 2026-11-29 09:00:00 UTC · 1 GPU\n",
		"  memory  [????????????????????????] n/a\n",
		"  util n/a  mem util n/a  temp n/a  power n/a\n",
		"  no processes\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printStatus with unknown readings: got\n%s\nwant it to contain %q", b.String(), want)
		}
	}
}

func TestPrintStatusTopProcesses(t *testing.T) {
	d := gpu.Device{Index: 0, UUID: "GPU-x", Name: "H100", MemUsed: 70 << 30, MemTotal: 80 << 30}
	for i := range 7 {
		d.Processes = append(d.Processes, gpu.Process{PID: 100 + i, User: "u", Command: "c", MemUsed: uint64(i+1) << 30})
	}
	var b strings.Builder
	printStatus(&b, &gpu.Snapshot{Host: "h", Devices: []gpu.Device{d}}, time.UTC)
	out := b.String()
	if !strings.Contains(out, "… and 2 more\n") {
		t.Errorf("printStatus with 7 processes: got\n%s\nwant the 5 largest and \"… and 2 more\"", out)
	}
	first, last := strings.Index(out, "pid 106 "), strings.Index(out, "pid 102 ")
	if first < 0 || last < 0 || first > last || strings.Contains(out, "pid 101 ") {
		t.Errorf("printStatus with 7 processes: got\n%s\nwant pids 106 down to 102, largest first", out)
	}
}
