package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// rowRE is a row of the reference traces, one group per column.
var rowRE = regexp.MustCompile(`^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}), (\d+), ([^,]+), (GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}), (\d+), (\d+) %, (\d+) %, (\d+) MiB, (\d+) MiB, (\d+\.\d\d) W$`)

func readLines(t *testing.T, r io.Reader) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestWriteCSVMatchesTraceLayout(t *testing.T) {
	f, err := os.Open("testdata/memory-leak.head.csv") // the first rows of shared/traces/memory-leak.csv
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trace := readLines(t, f)
	for i, row := range trace[1:] {
		if !rowRE.MatchString(row) {
			t.Fatalf("trace row %d %q does not match the row pattern; fix the test", i+1, row)
		}
	}

	src, err := sim.New(sim.Config{Scenario: "memory-leak", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sim.WriteCSV(&out, src); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, &out)
	if lines[0] != trace[0] {
		t.Errorf("header\n%q\nwant the trace's\n%q", lines[0], trace[0])
	}
	if sim.CSVHeader != trace[0] {
		t.Errorf("CSVHeader\n%q\nwant the trace's\n%q", sim.CSVHeader, trace[0])
	}
	if got, want := len(lines), 1+2*1440; got != want {
		t.Errorf("%d lines, want %d (header, 2 GPUs × 1440 samples)", got, want)
	}
	for i, row := range lines[1:] {
		got := rowRE.FindStringSubmatch(row)
		if got == nil {
			t.Fatalf("row %d %q does not look like a trace row", i+1, row)
		}
		// Same GPUs as the trace: name and total memory.
		want := rowRE.FindStringSubmatch(trace[1+i%2])
		if got[2] != want[2] || got[3] != want[3] || got[9] != want[9] {
			t.Fatalf("row %d is GPU %s, a %s with %s MiB; the trace has GPU %s, a %s with %s MiB", i+1, got[2], got[3], got[9], want[2], want[3], want[9])
		}
	}
}

func TestWriteCSVRowsAreTheSnapshots(t *testing.T) {
	cfg := sim.Config{Scenario: "all", Seed: 4, Step: 10 * time.Second}
	snaps, _ := run(t, cfg)
	src, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sim.WriteCSV(&out, src); err != nil {
		t.Fatal(err)
	}
	rows := readLines(t, &out)[1:]
	type sampled struct {
		s *gpu.Snapshot
		d gpu.Device
	}
	var devices []sampled // every device of every snapshot, in order: a lost GPU has no rows
	for _, s := range snaps {
		for _, d := range s.Devices {
			devices = append(devices, sampled{s, d})
		}
	}
	if len(rows) != len(devices) {
		t.Fatalf("%d rows, want %d", len(rows), len(devices))
	}
	var prev time.Time
	for i, row := range rows {
		s, d := devices[i].s, devices[i].d
		m := rowRE.FindStringSubmatch(row)
		if m == nil {
			t.Fatalf("row %d %q does not look like a trace row", i, row)
		}
		at, err := time.Parse("2006/01/02 15:04:05.000", m[1])
		if err != nil {
			t.Fatal(err)
		}
		if off := at.Sub(s.Time); off < 0 || off > 20*time.Millisecond {
			t.Errorf("row %d at %v, %v after its snapshot; want a few ms", i, at, off)
		}
		if !at.After(prev) {
			t.Errorf("row %d at %v, not after the previous row at %v", i, at, prev)
		}
		prev = at
		want := []string{
			strconv.Itoa(d.Index), d.Name, d.UUID,
			fmt.Sprint(d.TempC), fmt.Sprint(d.UtilGPU), fmt.Sprint(d.UtilMem),
			fmt.Sprint(d.MemUsed >> 20), fmt.Sprint(d.MemTotal >> 20), fmt.Sprintf("%.2f", d.PowerW),
		}
		for k, w := range want {
			if m[k+2] != w {
				t.Errorf("row %d column %d is %q, want %q", i, k+1, m[k+2], w)
			}
		}
	}
}

// fakeSource plays fixed snapshots, then err.
type fakeSource struct {
	snaps []*gpu.Snapshot
	err   error
}

func (f *fakeSource) Next(context.Context) (*gpu.Snapshot, error) {
	if len(f.snaps) == 0 {
		return nil, f.err
	}
	s := f.snaps[0]
	f.snaps = f.snaps[1:]
	return s, nil
}

func (f *fakeSource) Close() error { return nil }

func TestWriteCSVUnknownReadings(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := &fakeSource{err: io.EOF, snaps: []*gpu.Snapshot{{
		Time: at,
		Devices: []gpu.Device{
			{Index: 0, Name: "Tesla T4", UUID: "GPU-00000000-0000-0000-0000-000000000000", TempC: math.NaN(), UtilGPU: math.NaN(), UtilMem: math.NaN(), PowerW: math.NaN()},
			{Index: 1, Name: "Tesla T4", UUID: "GPU-00000000-0000-0000-0000-000000000001", TempC: 41, UtilGPU: 7, UtilMem: 3, MemUsed: 1500 << 20, MemTotal: 15360 << 20, PowerW: 27.456},
		},
	}}}
	var out bytes.Buffer
	if err := sim.WriteCSV(&out, src); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, &out)
	want := []string{
		sim.CSVHeader,
		"2026/01/02 03:04:05.0, 0, Tesla T4, GPU-00000000-0000-0000-0000-000000000000, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]",
		"2026/01/02 03:04:05.0, 1, Tesla T4, GPU-00000000-0000-0000-0000-000000000001, 41, 7 %, 3 %, 1500 MiB, 15360 MiB, 27.46 W",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(lines), lines, len(want))
	}
	for i := range want {
		// The milliseconds vary by GPU; compare the rest.
		got := lines[i]
		if i > 0 {
			got = got[:len("2026/01/02 03:04:05.0")] + got[len("2026/01/02 03:04:05.000"):]
		}
		if got != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, want[i])
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteCSVErrors(t *testing.T) {
	boom := errors.New("boom")
	err := sim.WriteCSV(io.Discard, &fakeSource{err: boom})
	if !errors.Is(err, boom) {
		t.Errorf("source error: WriteCSV returned %v, want it wrapping %v", err, boom)
	}
	src, err := sim.New(sim.Config{Scenario: "thermal"})
	if err != nil {
		t.Fatal(err)
	}
	err = sim.WriteCSV(failingWriter{}, src)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("writer error: WriteCSV returned %v, want the disk full error", err)
	}
}
