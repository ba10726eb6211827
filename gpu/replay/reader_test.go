package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// header10 is the header of the traces in testdata, as nvidia-smi writes it.
const header10 = "timestamp, index, name, uuid, temperature.gpu, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n"

const (
	uuid0 = "GPU-cd613e30-d8f1-6adf-91b7-584a2265b1f5"
	uuid1 = "GPU-1e2feb89-414c-343c-1027-c4d1c386bbc4"
	h100  = "NVIDIA H100 80GB HBM3"
	mib   = 1 << 20
)

var nan = math.NaN()

// readAll reads every snapshot of r and fails the test on any error.
func readAll(t testing.TB, r *Reader) []*gpu.Snapshot {
	t.Helper()
	var snaps []*gpu.Snapshot
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			return snaps
		}
		if err != nil {
			t.Fatalf("Next after %d snapshots: %v", len(snaps), err)
		}
		snaps = append(snaps, s)
	}
}

// parse reads the log in text and returns its snapshots up to the first
// error, and that error (nil at a clean end).
func parse(text string, opts Options) ([]*gpu.Snapshot, error) {
	r, err := NewReader(strings.NewReader(text), "gpu.csv", opts)
	if err != nil {
		return nil, err
	}
	var snaps []*gpu.Snapshot
	for {
		s, err := r.Next(context.Background())
		if err == io.EOF {
			return snaps, nil
		}
		if err != nil {
			return snaps, err
		}
		snaps = append(snaps, s)
	}
}

// sameFloat compares readings, NaN (unknown) equal to NaN.
func sameFloat(a, b float64) bool {
	return a == b || math.IsNaN(a) && math.IsNaN(b)
}

// diffDevice describes how got differs from want, or returns "".
func diffDevice(got, want gpu.Device) string {
	var d []string
	add := func(ok bool, field string, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", field, g, w))
		}
	}
	add(got.Index == want.Index, "Index", got.Index, want.Index)
	add(got.UUID == want.UUID, "UUID", got.UUID, want.UUID)
	add(got.Name == want.Name, "Name", got.Name, want.Name)
	add(got.MemUsed == want.MemUsed, "MemUsed", got.MemUsed, want.MemUsed)
	add(got.MemTotal == want.MemTotal, "MemTotal", got.MemTotal, want.MemTotal)
	add(sameFloat(got.UtilGPU, want.UtilGPU), "UtilGPU", got.UtilGPU, want.UtilGPU)
	add(sameFloat(got.UtilMem, want.UtilMem), "UtilMem", got.UtilMem, want.UtilMem)
	add(sameFloat(got.TempC, want.TempC), "TempC", got.TempC, want.TempC)
	add(sameFloat(got.PowerW, want.PowerW), "PowerW", got.PowerW, want.PowerW)
	add(sameFloat(got.PowerLimitW, want.PowerLimitW), "PowerLimitW", got.PowerLimitW, want.PowerLimitW)
	return strings.Join(d, "; ")
}

// checkDevices fails the test when got and want differ.
func checkDevices(t *testing.T, what string, got, want []gpu.Device) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d devices, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := diffDevice(got[i], want[i]); d != "" {
			t.Errorf("%s: device %d: %s", what, i, d)
		}
	}
}

// dev is a device with every reading of the traces.
func dev(index int, uuid, name string, temp, utilGPU, utilMem float64, usedMiB, totalMiB uint64, power float64) gpu.Device {
	return gpu.Device{Index: index, UUID: uuid, Name: name, TempC: temp, UtilGPU: utilGPU, UtilMem: utilMem,
		MemUsed: usedMiB * mib, MemTotal: totalMiB * mib, PowerW: power, PowerLimitW: nan}
}

func utc(s string) time.Time {
	t, err := time.Parse("2006/01/02 15:04:05.000", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestTraces(t *testing.T) {
	type spot struct {
		snap int
		at   string
		dev  gpu.Device
	}
	a100 := "NVIDIA A100-SXM4-40GB"
	tests := []struct {
		file  string
		snaps int
		gpus  int
		spots []spot
	}{
		{"normal-training.csv", 1440, 2, []spot{
			{0, "2026/11/29 09:00:00.000", dev(0, uuid0, h100, 36, 0, 0, 500, 81559, 60.81)},
			{1439, "2026/11/29 10:59:55.001", dev(1, uuid1, h100, 67, 95, 58, 49527, 81559, 626.62)},
		}},
		{"memory-leak.csv", 1440, 2, []spot{
			{0, "2026/11/29 09:00:00.000", dev(1, uuid1, a100, 38, 0, 0, 400, 40960, 59.08)},
			{499, "2026/11/29 09:41:35.002", dev(1, uuid1, a100, 66, 94, 52, 30412, 40960, 377.51)},
		}},
		{"idle-hog.csv", 1440, 2, []spot{
			{749, "2026/11/29 10:02:25.001", dev(1, uuid1, a100, 39, 0, 0, 20478, 40960, 61.79)},
		}},
		{"thermal.csv", 1440, 2, []spot{
			{999, "2026/11/29 10:23:15.002", dev(0, uuid0, h100, 86, 86, 50, 50035, 81559, 561.70)},
		}},
		{"batch-spike.csv", 1440, 1, []spot{
			{699, "2026/11/29 09:58:15.000", dev(0, uuid0, "NVIDIA GeForce RTX 4090", 66, 97, 55, 23859, 24564, 424.26)},
			{1439, "2026/11/29 10:59:55.001", dev(0, uuid0, "NVIDIA GeForce RTX 4090", 66, 94, 58, 23877, 24564, 420.87)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := Open(filepath.Join("testdata", tt.file), Options{Host: "gpu01"})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			snaps := readAll(t, r)
			if len(snaps) != tt.snaps {
				t.Fatalf("got %d snapshots, want %d", len(snaps), tt.snaps)
			}
			for i, s := range snaps {
				if len(s.Devices) != tt.gpus {
					t.Fatalf("snapshot %d: got %d devices, want %d", i, len(s.Devices), tt.gpus)
				}
				if s.Host != "gpu01" {
					t.Fatalf("snapshot %d: got host %q, want gpu01", i, s.Host)
				}
				for j, d := range s.Devices {
					if d.Index != j {
						t.Fatalf("snapshot %d: device %d has index %d, want %d", i, j, d.Index, j)
					}
				}
				if i > 0 && s.Time.Before(snaps[i-1].Time) {
					t.Fatalf("snapshot %d at %v is before snapshot %d at %v", i, s.Time, i-1, snaps[i-1].Time)
				}
			}
			for _, sp := range tt.spots {
				s := snaps[sp.snap]
				if want := utc(sp.at); !s.Time.Equal(want) {
					t.Errorf("snapshot %d: got time %v, want %v", sp.snap, s.Time, want)
				}
				if d := diffDevice(s.Devices[sp.dev.Index], sp.dev); d != "" {
					t.Errorf("snapshot %d: %s", sp.snap, d)
				}
			}
			if r.Skipped() != 0 {
				t.Errorf("got %d skipped rows, want 0", r.Skipped())
			}
		})
	}
}

// TestInternedStrings checks that every snapshot of a GPU shares its name
// and UUID strings rather than holding copies.
func TestInternedStrings(t *testing.T) {
	r, err := Open(filepath.Join("testdata", "normal-training.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snaps := readAll(t, r)
	first, last := snaps[0].Devices[1], snaps[len(snaps)-1].Devices[1]
	if ptr(first.UUID) != ptr(last.UUID) || ptr(first.Name) != ptr(last.Name) {
		t.Errorf("got separate copies of the name and UUID of GPU 1, want one shared string each")
	}
}

// ptr returns the address of a string's bytes.
func ptr(s string) *byte { return unsafe.StringData(s) }

// shuffle rewrites every line of a CSV log with its columns in the order
// perm gives.
func shuffle(log string, perm []int) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			b.WriteString("\n")
			continue
		}
		fields := strings.Split(line, ", ")
		out := make([]string, len(perm))
		for i, p := range perm {
			out[i] = fields[p]
		}
		b.WriteString(strings.Join(out, ", ") + "\n")
	}
	return b.String()
}

func TestShuffledColumns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "memory-leak.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := parse(string(data), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, perm := range [][]int{
		{9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		{3, 7, 0, 9, 1, 5, 8, 2, 6, 4},
		{8, 1, 2, 0, 4, 5, 6, 7, 3, 9},
	} {
		got, err := parse(shuffle(string(data), perm), Options{})
		if err != nil {
			t.Fatalf("order %v: %v", perm, err)
		}
		if len(got) != len(want) {
			t.Fatalf("order %v: got %d snapshots, want %d", perm, len(got), len(want))
		}
		for i := range got {
			if !got[i].Time.Equal(want[i].Time) {
				t.Fatalf("order %v: snapshot %d: got time %v, want %v", perm, i, got[i].Time, want[i].Time)
			}
			checkDevices(t, fmt.Sprintf("order %v: snapshot %d", perm, i), got[i].Devices, want[i].Devices)
		}
	}
}

func TestColumns(t *testing.T) {
	const ts = "2026/11/29 09:00:00.000"
	tests := []struct {
		name string
		log  string
		want []gpu.Device // of the first snapshot
	}{
		{
			name: "nvidia-smi default",
			log:  header10 + ts + ", 0, " + h100 + ", " + uuid0 + ", 36, 7 %, 3 %, 500 MiB, 81559 MiB, 60.81 W\n",
			want: []gpu.Device{dev(0, uuid0, h100, 36, 7, 3, 500, 81559, 60.81)},
		},
		{
			name: "nounits",
			log:  header10 + ts + ", 0, " + h100 + ", " + uuid0 + ", 36, 7, 3, 500, 81559, 60.81\n",
			want: []gpu.Device{dev(0, uuid0, h100, 36, 7, 3, 500, 81559, 60.81)},
		},
		{
			name: "no spaces after commas",
			log: strings.ReplaceAll(header10, ", ", ",") +
				ts + ",0," + h100 + "," + uuid0 + ",36,7 %,3 %,500 MiB,81559 MiB,60.81 W\n",
			want: []gpu.Device{dev(0, uuid0, h100, 36, 7, 3, 500, 81559, 60.81)},
		},
		{
			name: "no power",
			log: "timestamp, index, memory.used [MiB], memory.total [MiB]\n" +
				ts + ", 0, 500 MiB, 81559 MiB\n" + ts + ", 1, 0 MiB, 81559 MiB\n",
			want: []gpu.Device{
				{Index: 0, MemUsed: 500 * mib, MemTotal: 81559 * mib, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan},
				{Index: 1, MemUsed: 0, MemTotal: 81559 * mib, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan},
			},
		},
		{
			name: "no uuid",
			log:  "timestamp, index, utilization.gpu [%]\n" + ts + ", 3, 50 %\n",
			want: []gpu.Device{{Index: 3, UtilGPU: 50, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "no index: uuids numbered in order of appearance",
			log: "uuid, timestamp, power.draw [W]\n" +
				uuid1 + ", " + ts + ", 100 W\n" + uuid0 + ", 2026/11/29 09:00:00.003, 50 W\n" +
				uuid0 + ", 2026/11/29 09:00:05.000, 51 W\n" + uuid1 + ", 2026/11/29 09:00:05.004, 101 W\n",
			want: []gpu.Device{
				{Index: 0, UUID: uuid1, PowerW: 100, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerLimitW: nan},
				{Index: 1, UUID: uuid0, PowerW: 50, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerLimitW: nan},
			},
		},
		{
			name: "memory.used from total and free",
			log:  "timestamp, index, memory.total [MiB], memory.free [MiB]\n" + ts + ", 0, 81559 MiB, 81059 MiB\n",
			want: []gpu.Device{{Index: 0, MemUsed: 500 * mib, MemTotal: 81559 * mib, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "memory.total from used and free",
			log:  "timestamp, index, memory.used [MiB], memory.free [MiB]\n" + ts + ", 0, 500 MiB, 81059 MiB\n",
			want: []gpu.Device{{Index: 0, MemUsed: 500 * mib, MemTotal: 81559 * mib, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "memory.used alone: memory unknown",
			log:  "timestamp, index, memory.used [MiB]\n" + ts + ", 0, 500 MiB\n",
			want: []gpu.Device{{Index: 0, MemUsed: 500 * mib, MemTotal: 0, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "memory.total alone: memory unknown",
			log:  "timestamp, index, memory.total [MiB]\n" + ts + ", 0, 81559 MiB\n",
			want: []gpu.Device{{Index: 0, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "enforced power limit wins over power.limit, unknown columns ignored",
			log: "timestamp, index, pci.bus_id, power.limit [W], clocks.sm [MHz], enforced.power.limit [W], power.draw [W]\n" +
				ts + ", 0, 00000000:18:00.0, 700.00 W, 1980 MHz, 350.00 W, 60.81 W\n",
			want: []gpu.Device{{Index: 0, PowerW: 60.81, PowerLimitW: 350, UtilGPU: nan, UtilMem: nan, TempC: nan}},
		},
		{
			name: "power.draw.average when there is no power.draw",
			log:  "timestamp, index, power.draw.average [W], power.limit [W]\n" + ts + ", 0, 61.5 W, 700.00 W\n",
			want: []gpu.Device{{Index: 0, PowerW: 61.5, PowerLimitW: 700, UtilGPU: nan, UtilMem: nan, TempC: nan}},
		},
		{
			name: "memory in GiB, fractions, upper-case names",
			log:  "Timestamp, Index, memory.used [GiB], memory.total [GiB]\n" + ts + ", 0, 1.5 GiB, 80\n",
			want: []gpu.Device{{Index: 0, MemUsed: 1536 * mib, MemTotal: 80 << 30, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}},
		},
		{
			name: "unknown readings",
			log: header10 +
				ts + ", 0, [N/A], [N/A], [Not Supported], [N/A], N/A, [Unknown Error], 81559 MiB, [Not Supported]\n" +
				ts + ", 1, " + h100 + ", " + uuid1 + ", 40, 1 %, [N/A], 500 MiB, [N/A], 70 W\n",
			want: []gpu.Device{
				{Index: 0, UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan},
				// memory.total unknown: the total of an H100 80GB, from its name
				{Index: 1, UUID: uuid1, Name: h100, TempC: 40, UtilGPU: 1, UtilMem: nan, MemUsed: 500 * mib, MemTotal: 80 << 30, PowerW: 70, PowerLimitW: nan},
			},
		},
		{
			name: "RFC 3339 timestamps",
			log:  "timestamp, index, temperature.gpu\n2026-11-29T10:00:00.5+01:00, 0, 36 C\n",
			want: []gpu.Device{{Index: 0, TempC: 36, UtilGPU: nan, UtilMem: nan, PowerW: nan, PowerLimitW: nan}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snaps, err := parse(tt.log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) == 0 {
				t.Fatal("got no snapshots, want at least one")
			}
			checkDevices(t, "first snapshot", snaps[0].Devices, tt.want)
		})
	}
}

func TestLayout(t *testing.T) {
	row := func(ts string, i int) string {
		return fmt.Sprintf("%s, %d, %s, %s, 36, 0 %%, 0 %%, 500 MiB, 81559 MiB, 60.81 W", ts, i, h100, []string{uuid0, uuid1}[i])
	}
	tests := []struct {
		name  string
		log   string
		snaps int
	}{
		{"blank lines", header10 + "\n" + row("2026/11/29 09:00:00.000", 0) + "\n\n  \n" + row("2026/11/29 09:00:05.000", 0) + "\n\n", 2},
		{"reprinted header", header10 + row("2026/11/29 09:00:00.000", 0) + "\n" + header10 + row("2026/11/29 09:00:05.000", 0) + "\n", 2},
		{"CRLF line endings", strings.ReplaceAll(header10+row("2026/11/29 09:00:00.000", 0)+"\n"+row("2026/11/29 09:00:00.002", 1)+"\n", "\n", "\r\n"), 1},
		{"byte order mark and blank first line", "\xef\xbb\xbf\n" + header10 + row("2026/11/29 09:00:00.000", 0) + "\n", 1},
		{"no final newline", header10 + row("2026/11/29 09:00:00.000", 0) + "\n" + row("2026/11/29 09:00:05.000", 0), 2},
		{"header only", header10, 0},
		{
			"logs of another query appended",
			header10 + row("2026/11/29 09:00:00.000", 0) + "\n" +
				"index, timestamp, power.draw [W]\n0, 2026/11/29 09:00:05.000, 61 W\n",
			2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snaps, err := parse(tt.log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != tt.snaps {
				t.Fatalf("got %d snapshots, want %d", len(snaps), tt.snaps)
			}
			for i, s := range snaps {
				if s.Devices[0].TempC != 36 && !math.IsNaN(s.Devices[0].TempC) {
					t.Errorf("snapshot %d: got temperature %v, want 36", i, s.Devices[0].TempC)
				}
			}
		})
	}
}

func TestGrouping(t *testing.T) {
	type row struct {
		at  string // seconds after 09:00:00, "SS.mmm"
		gpu int
	}
	type group struct {
		at   string
		gpus []int
	}
	tests := []struct {
		name string
		rows []row
		want []group
	}{
		{
			"GPUs of a sample a few ms apart",
			[]row{{"00.000", 0}, {"00.004", 1}, {"05.001", 0}, {"05.003", 1}},
			[]group{{"00.000", []int{0, 1}}, {"05.001", []int{0, 1}}},
		},
		{
			"a GPU seen again starts a snapshot, even at the same time",
			[]row{{"00.000", 0}, {"00.000", 0}, {"00.000", 1}},
			[]group{{"00.000", []int{0}}, {"00.000", []int{0, 1}}},
		},
		{
			"a row more than 1s after the first starts a snapshot",
			[]row{{"00.000", 0}, {"01.001", 1}, {"01.500", 0}},
			[]group{{"00.000", []int{0}}, {"01.001", []int{0, 1}}},
		},
		{
			"a row exactly 1s after the first joins",
			[]row{{"00.000", 0}, {"01.000", 1}},
			[]group{{"00.000", []int{0, 1}}},
		},
		{
			"GPUs out of order are sorted",
			[]row{{"00.000", 2}, {"00.001", 0}, {"00.002", 1}},
			[]group{{"00.000", []int{0, 1, 2}}},
		},
		{
			"a row a little before the first joins",
			[]row{{"00.500", 0}, {"00.100", 1}, {"05.000", 0}},
			[]group{{"00.500", []int{0, 1}}, {"05.000", []int{0}}},
		},
		{
			"a GPU disappears for a while",
			[]row{{"00.000", 0}, {"00.001", 1}, {"05.000", 0}, {"10.000", 0}, {"10.001", 1}},
			[]group{{"00.000", []int{0, 1}}, {"05.000", []int{0}}, {"10.000", []int{0, 1}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := "timestamp, index\n"
			for _, r := range tt.rows {
				log += fmt.Sprintf("2026/11/29 09:00:%s, %d\n", r.at, r.gpu)
			}
			snaps, err := parse(log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != len(tt.want) {
				t.Fatalf("got %d snapshots, want %d", len(snaps), len(tt.want))
			}
			for i, s := range snaps {
				var gpus []int
				for _, d := range s.Devices {
					gpus = append(gpus, d.Index)
				}
				if !slices.Equal(gpus, tt.want[i].gpus) {
					t.Errorf("snapshot %d: got GPUs %v, want %v", i, gpus, tt.want[i].gpus)
				}
				if want := utc("2026/11/29 09:00:" + tt.want[i].at); !s.Time.Equal(want) {
					t.Errorf("snapshot %d: got time %v, want %v", i, s.Time, want)
				}
			}
		})
	}
}

func TestBadRows(t *testing.T) {
	const good = "2026/11/29 09:00:00.000, 0, " + h100 + ", " + uuid0 + ", 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W"
	field := func(i int, v string) string {
		f := strings.Split(good, ", ")
		f[i] = v
		return strings.Join(f, ", ")
	}
	col := func(line string, v string) int { return strings.Index(line, v) + 1 }
	tests := []struct {
		name    string
		rows    string // after the header
		line    int
		col     int
		msg     string
		wantErr string // the whole Error(), when set
	}{
		{
			name: "cut short", rows: good[:60] + "\n", line: 2, col: 61,
			msg: "row has 4 fields, the header has 10: the row is cut short",
		},
		{
			name: "too many fields", rows: good + ", 7\n", line: 2, col: len(good) + 3,
			msg: "row has 11 fields, the header has 10",
		},
		{
			name: "bad memory", rows: field(7, "12x MiB") + "\n", line: 2, col: col(field(7, "12x MiB"), "12x"),
			wantErr: `gpu.csv:2:` + fmt.Sprint(col(field(7, "12x MiB"), "12x")) +
				`: memory.used: "12x MiB" is not a number; want a value such as "500 MiB" (or "500" in nounits logs), or [N/A] when unknown`,
		},
		{
			name: "negative memory", rows: field(8, "-5 MiB") + "\n", line: 2, col: col(field(8, "-5 MiB"), ", -5") + 2,
			msg: `memory.total: "-5 MiB" is not a number`,
		},
		{
			name: "memory unit", rows: field(7, "500 MHz") + "\n", line: 2, col: col(field(7, "500 MHz"), "500 MHz"),
			msg: `memory.used: unit "MHz" in "500 MHz" is not a memory unit`,
		},
		{
			name: "wrong unit", rows: field(5, "71 W") + "\n", line: 2, col: col(field(5, "71 W"), "71 W"),
			msg: `utilization.gpu: unit "W" in "71 W" does not fit the column; want %`,
		},
		{
			name: "bad power", rows: field(9, "60,81 W") + "\n", line: 2, col: len(good) - 3,
			msg: "row has 11 fields",
		},
		{
			name: "bad temperature", rows: field(4, "hot") + "\n", line: 2, col: col(field(4, "hot"), "hot"),
			msg: `temperature.gpu: "hot" is not a number`,
		},
		{
			name: "bad timestamp", rows: field(0, "2026/13/29 09:00:00.000") + "\n", line: 2, col: 1,
			msg: `timestamp: "2026/13/29 09:00:00.000" is not a time`,
		},
		{
			name: "bad index", rows: "\n" + field(1, "x") + "\n", line: 3, col: 26,
			msg: `index: "x" is not a GPU index`,
		},
		{
			name: "time going back",
			rows: good + "\n" + field(0, "2026/11/29 08:59:58.000") + "\n", line: 3, col: 1,
			msg: "timestamp 2026/11/29 08:59:58.000 goes back 2s from 2026/11/29 09:00:00.000 at line 2",
		},
		{
			name: "same GPU a little earlier",
			rows: good + "\n" + field(0, "2026/11/29 08:59:59.900") + "\n", line: 3, col: 1,
			msg: "goes back 100ms",
		},
		{
			name: "next snapshot before the previous one",
			rows: good + "\n" + field(0, "2026/11/29 09:00:10.000") + "\n" + field(0, "2026/11/29 09:00:09.000") + "\n",
			line: 4, col: 1, msg: "goes back 1s from 2026/11/29 09:00:10.000 at line 3",
		},
		{
			name: "line too long", rows: good + "\n" + strings.Repeat("x", maxLine+10) + "\n", line: 3, col: 1,
			msg: "line is longer than 1 MiB",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(header10+tt.rows, Options{})
			var perr *ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("got error %v, want a *ParseError", err)
			}
			if perr.File != "gpu.csv" || perr.Line != tt.line || perr.Col != tt.col {
				t.Errorf("got position %s:%d:%d, want gpu.csv:%d:%d", perr.File, perr.Line, perr.Col, tt.line, tt.col)
			}
			if tt.wantErr != "" && err.Error() != tt.wantErr {
				t.Errorf("got error\n%s\nwant\n%s", err, tt.wantErr)
			}
			if !strings.Contains(perr.Msg, tt.msg) {
				t.Errorf("got message %q, want it to contain %q", perr.Msg, tt.msg)
			}
		})
	}
}

func TestHeaderErrors(t *testing.T) {
	tests := []struct {
		name string
		log  string
		line int
		col  int
		msg  string
	}{
		{"empty", "", 1, 1, "the log is empty"},
		{"blank lines only", "\n\n", 2, 1, "the log is empty"},
		{"noheader log", "2026/11/29 09:00:00.000, 0, 500 MiB\n", 1, 1, "--format=csv,noheader"},
		{"unknown memory unit", "timestamp, index, memory.used [MHz]\n", 1, 19, `column "memory.used [MHz]" has unknown memory unit "MHz"`},
		{"a later line", "\n\nfoo, bar\n", 3, 1, `not a GPU log gpuwatch reads: "foo, bar" is none of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(strings.NewReader(tt.log), "gpu.csv", Options{})
			var perr *ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("got error %v, want a *ParseError", err)
			}
			if perr.Line != tt.line || perr.Col != tt.col {
				t.Errorf("got position %d:%d, want %d:%d", perr.Line, perr.Col, tt.line, tt.col)
			}
			if !strings.Contains(perr.Msg, tt.msg) {
				t.Errorf("got message %q, want it to contain %q", perr.Msg, tt.msg)
			}
		})
	}
}

func TestSkipBad(t *testing.T) {
	const good = ", 0, " + h100 + ", " + uuid0 + ", 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W\n"
	log := header10 +
		"2026/11/29 09:00:00.000" + good +
		"2026/11/29 09:00:05.000, 0, cut\n" + // line 3
		"2026/11/29 09:00:05.000" + good +
		"2026/11/29 09:00:01.000" + good + // line 5: back in time
		"2026/11/29 09:00:10.000" + strings.Replace(good, "36", "3x", 1) + // line 6
		"2026/11/29 09:00:15.000" + good
	var logged bytes.Buffer
	r, err := NewReader(strings.NewReader(log), "gpu.csv", Options{
		SkipBad: true,
		Logger:  slog.New(slog.NewTextHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	snaps := readAll(t, r)
	if got, want := len(snaps), 3; got != want {
		t.Errorf("got %d snapshots, want %d", got, want)
	}
	if got, want := r.Skipped(), 3; got != want {
		t.Errorf("got %d skipped rows, want %d", got, want)
	}
	out := logged.String()
	for _, want := range []string{"gpu.csv:3:", "gpu.csv:5:1: timestamp", "gpu.csv:6:", "rows=3", "first_lines=\"[3 5 6]\""} {
		if !strings.Contains(out, want) {
			t.Errorf("got log\n%s\nwant it to contain %q", out, want)
		}
	}
	if _, err := r.Next(context.Background()); err != io.EOF {
		t.Errorf("got %v after the end, want io.EOF", err)
	}
	if n := strings.Count(logged.String(), "skipped bad rows"); n != 1 {
		t.Errorf("got the summary logged %d times, want once", n)
	}
}

// TestSkipBadWarnings checks that the warnings go to Options.Warnings as
// plain lines, the first few one by one and then a count.
func TestSkipBadWarnings(t *testing.T) {
	const good = ", 0, " + h100 + ", " + uuid0 + ", 36, 0 %, 0 %, 500 MiB, 81559 MiB, 60.81 W\n"
	log := header10 + "2026/11/29 09:00:00.000" + good
	for i := range 7 {
		log += fmt.Sprintf("2026/11/29 09:00:%02d.000, 0, cut\n", 5+i)
	}
	var warnings, logged bytes.Buffer
	r, err := NewReader(strings.NewReader(log), "gpu.csv", Options{
		SkipBad: true, Warnings: &warnings, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, r)
	lines := strings.Split(strings.TrimSpace(warnings.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d warning lines, want 5 rows and a count:\n%s", len(lines), warnings.String())
	}
	for i, l := range lines[:5] {
		if want := fmt.Sprintf("warning: gpu.csv:%d:", 3+i); !strings.HasPrefix(l, want) || !strings.HasSuffix(l, "; row skipped") {
			t.Errorf("warning %d: got %q, want %s…; row skipped", i, l, want)
		}
	}
	if want := "warning: gpu.csv: 2 more malformed rows skipped"; lines[5] != want {
		t.Errorf("got last warning %q, want %q", lines[5], want)
	}
	if logged.Len() > 0 {
		t.Errorf("got log lines beside the warnings:\n%s", logged.String())
	}
}

// TestResumeAfterError checks that a caller may go on reading past a bad row.
func TestResumeAfterError(t *testing.T) {
	log := "timestamp, index\n2026/11/29 09:00:00.000, 0\n2026/11/29 09:00:00.001, x\n2026/11/29 09:00:00.002, 1\n"
	r, err := NewReader(strings.NewReader(log), "gpu.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(context.Background()); err == nil {
		t.Fatal("got no error for the bad row, want one")
	}
	snaps := readAll(t, r)
	if len(snaps) != 1 || len(snaps[0].Devices) != 2 {
		t.Fatalf("got %d snapshots, want one of 2 GPUs", len(snaps))
	}
}

func TestLocation(t *testing.T) {
	log := "timestamp, index\n2026/07/01 09:00:00.250, 0\n"
	zone := time.FixedZone("UTC+2", 2*3600)
	snaps, err := parse(log, Options{Location: zone})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 7, 1, 7, 0, 0, 250e6, time.UTC); !snaps[0].Time.Equal(want) {
		t.Errorf("got %v, want %v", snaps[0].Time, want)
	}
	if snaps[0].Time.Location() != zone {
		t.Errorf("got location %v, want %v", snaps[0].Time.Location(), zone)
	}

	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	// Daylight saving time starts at 02:00 on 2026-03-08: 01:59 and 03:00
	// are one minute apart.
	snaps, err = parse("timestamp, index\n2026/03/08 01:59:00, 0\n2026/03/08 03:00:00, 0\n", Options{Location: ny})
	if err != nil {
		t.Fatal(err)
	}
	if got := snaps[1].Time.Sub(snaps[0].Time); got != time.Minute {
		t.Errorf("got %v between 01:59 and 03:00 across the DST change, want 1m", got)
	}
}

func TestSnapshotsAreKept(t *testing.T) {
	r, err := Open(filepath.Join("testdata", "normal-training.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	first, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, r)
	checkDevices(t, "first snapshot after reading the rest", first.Devices, []gpu.Device{
		dev(0, uuid0, h100, 36, 0, 0, 500, 81559, 60.81),
		dev(1, uuid1, h100, 36, 0, 0, 500, 81559, 63.47),
	})
}

func TestOpenClose(t *testing.T) {
	if _, err := Open(filepath.Join("testdata", "missing.csv"), Options{}); !errors.Is(err, os.ErrNotExist) ||
		!strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("got %v, want a not-exist error naming the file", err)
	}
	r, err := Open(filepath.Join("testdata", "thermal.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var src gpu.Source = r
	if _, err := src.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := src.Next(context.Background()); err == nil || err == io.EOF {
		t.Errorf("got %v from Next after Close, want an error", err)
	}
	if err := src.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
}

func TestCanceled(t *testing.T) {
	r, err := NewReader(strings.NewReader(header10), "gpu.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// failingReader returns some data, then an error.
type failingReader struct{ data []byte }

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	r, err := NewReader(&failingReader{[]byte(header10)}, "gpu.csv", Options{SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := r.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "read gpu.csv: disk on fire") {
			t.Errorf("got %v, want the read error", err)
		}
	}
}
