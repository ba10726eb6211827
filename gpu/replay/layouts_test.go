package replay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// layoutVariant is a short log of one layout, written another way than its
// sample in testdata/logs, and what reading it must give: the snapshots'
// times, and one GPU's readings in the last.
type layoutVariant struct {
	name   string
	log    string
	opts   Options
	format string
	times  []time.Time
	gpus   int
	last   gpu.Device // of the last snapshot, at its index
}

var layoutVariants = []layoutVariant{
	// Scripts' lines.
	{"lines: mem and util with units, in brackets", "[2026-11-29 09:00:00] GPU0 | Util: 45% | Mem: 8.0/24.0 GB | Temp: 60°C\n" +
		"[2026-11-29 09:00:05] GPU0 | Util: 46% | Mem: 8.5/24.0 GB | Temp: 61°C\n", Options{}, formatText,
		[]time.Time{at(0), at(5 * time.Second)}, 1, gpuReading(0, "", 8704, 24576, 46, 61, nan, nan)},
	{"lines: a value's label after a GPU's name, then free memory", "2026-11-29T09:00:00Z cuda:1 NVIDIA A100 80GB PCIe; memory.used=1200MiB; memory.free=80000MiB\n",
		Options{}, formatText, []time.Time{at(0)}, 1, gpuReading(1, "NVIDIA A100 80GB PCIe", 1200, 81200, nan, nan, nan, nan)},
	{"lines: two GPUs on one line", "[2026-11-29 09:00:00] gpu0: 10% 1000MiB/2000MiB | gpu1: 20% 1500MiB/2000MiB\n", Options{}, formatText,
		[]time.Time{at(0)}, 2, gpuReading(1, "", 1500, 2000, 20, nan, nan, nan)},
	{"lines: date's words first, power with its limit", "Sun Nov 29 09:00:00 UTC 2026 - GPU 0 - power: 250 W / 300 W - util: 7 %\n",
		Options{}, formatText, []time.Time{at(0)}, 1, gpuReading(0, "", 0, 0, 7, nan, 250, 300)},
	{"lines: epoch seconds, and a training step not read", "1795942800 device 0 gpu_util=99 mem_used=4000 loss=0.51 acc: 93%\n" +
		"1795942810 device 0 gpu_util=98 mem_used=4100 loss=0.50 acc: 94%\n", Options{}, formatText,
		[]time.Time{at(0), at(10 * time.Second)}, 1, gpuReading(0, "", 4100, 0, 98, nan, nan, nan)},
	{"lines: a memory share is not an amount", "[2026-11-29 09:00:00] GPU 0: Memory: 35% Util: 50%\n", Options{}, formatText,
		[]time.Time{at(0)}, 1, gpuReading(0, "", 0, 0, 50, nan, nan, nan)},
	{"blocks: one GPU, keys of scripts' columns, a rule between", "--- 2026-11-29 09:00:00 ---\ngpu_util: 45\nmem_used_mb: 8000\nmem_total_mb: 16000\n" +
		"-----------------\n--- 2026-11-29 09:01:00 ---\ngpu_util: 46\nmem_used_mb: 8001\nmem_total_mb: 16000\n", Options{}, formatText,
		[]time.Time{at(0), at(time.Minute)}, 1, gpuReading(0, "", 8001, 16000, 46, nan, nan, nan)},
	{"blocks: Date: label, power and temperature", "Date: Sun Nov 29 09:00:00 UTC 2026\nGPU: 0\nTemperature: 51 C\nPower Draw: 90.5 W\n" +
		"Utilization: 12 %\n", Options{}, formatText, []time.Time{at(0)}, 1, gpuReading(0, "", 0, 0, 12, 51, 90.5, nan)},
	{"status rows: two powers and no name", "(2026-11-29 09:00:00) GPU Status:\n0, 12 %, 100 MiB, 40960 MiB, 60 W, 300 W\n",
		Options{}, formatText, []time.Time{at(0)}, 1, gpuReading(0, "", 100, 40960, 12, nan, 60, 300)},
	{"status rows with --columns are nvidia-smi's noheader CSV", "[2026-11-29 09:00:00] GPU Status:\n0, 12, 100, 40960\n[2026-11-29 09:00:05] GPU Status:\n0, 13, 101, 40960\n",
		Options{Columns: "index,utilization.gpu,memory.used,memory.total"}, formatCSV, []time.Time{at(0), at(5 * time.Second)}, 1,
		gpuReading(0, "", 101, 40960, 13, nan, nan, nan)},
	{"pipes without the outer bars", "timestamp | index | memory.used [MiB] | utilization.gpu [%]\n2026/11/29 09:00:00 | 0 | 10 MiB | 1 %\n" +
		"2026/11/29 09:00:05 | 0 | 11 MiB | 2 %\n", Options{}, formatCSV, []time.Time{at(0), at(5 * time.Second)}, 1,
		gpuReading(0, "", 11, 0, 2, nan, nan, nan)},
	{"a column that says memory but not what, without units, is not read", "timestamp,gpu,util,mem\n2026-11-29 09:00:00,0,45,35\n",
		Options{}, formatCSV, []time.Time{at(0)}, 1, gpuReading(0, "", 0, 0, 45, nan, nan, nan)},
	{"a column of USED / TOTAL", "time,gpu,memory\n2026-11-29 09:00:00,0,8.5 / 24 GB\n", Options{}, formatCSV, []time.Time{at(0)}, 1,
		gpuReading(0, "", 8704, 24576, nan, nan, nan, nan)},

	// Decorated date lines, times of day alone.
	{"date lines: hashes, and date -R in brackets", "### Sun, 29 Nov 2026 09:00:00 +0000 ###\nindex, memory.used [MiB]\n0, 5 MiB\n" +
		"[Sun, 29 Nov 2026 09:00:10 +0000]\nindex, memory.used [MiB]\n0, 6 MiB\n", Options{}, formatCSV, []time.Time{at(0), at(10 * time.Second)}, 1,
		gpuReading(0, "", 6, 0, nan, nan, nan, nan)},
	{"date lines: a full date, then times of day, across midnight", "2026-11-29 23:59:00\nindex, memory.used [MiB]\n0, 5 MiB\n" +
		"=== 00:00:30 ===\nindex, memory.used [MiB]\n0, 6 MiB\n", Options{}, formatCSV,
		[]time.Time{at(14*time.Hour + 59*time.Minute), at(15*time.Hour + 30*time.Second)}, 1, gpuReading(0, "", 6, 0, nan, nan, nan, nan)},
	{"date lines: 12-hour times of day above a table", "Timestamp: 2026-11-29 09:00:00\nindex, utilization.gpu [%]\n0, 5 %\n09:05:00 AM\n" +
		"index, utilization.gpu [%]\n0, 6 %\n", Options{}, formatCSV, []time.Time{at(0), at(5 * time.Minute)}, 1, gpuReading(0, "", 0, 0, 6, nan, nan, nan)},

	{"date lines: decorated, above a table that lost its own", "==== Sun Nov 29 09:00:00 AM UTC 2026 ====\n" + table418Body +
		"==== Sun Nov 29 09:01:00 AM UTC 2026 ====\n" + table418Body, Options{}, formatTable, []time.Time{at(0), at(time.Minute)}, 1,
		gpuReading(0, "Tesla V100-SXM2...", 8000, 16130, 95, 50, 200, 300)},

	// One file, several layouts.
	{"a CSV, then dmon", "timestamp, index, utilization.gpu [%]\n2026/11/29 09:00:00, 0, 5 %\n# gpu    sm\n# Idx     %\n2026-11-29 09:00:10\n    0     7\n",
		Options{}, formatCSV + ", then " + formatDmon, []time.Time{at(0), at(10 * time.Second)}, 1, gpuReading(0, "", 0, 0, 7, nan, nan, nan)},

	// Columns asked for twice, rows of two widths, no times.
	{"a column twice, written alike and not", "timestamp, utilization.gpu [%], utilization.gpu [%]\n2026/11/29 09:00:00, 5 %, 5\n",
		Options{}, formatCSV, []time.Time{at(0)}, 1, gpuReading(0, "", 0, 0, 5, nan, nan, nan)},
	{"two widths: extra fields in front", "2026/11/29 09:00:00, 0, 5 MiB\nnode1, 7, 2026/11/29 09:00:05, 0, 6 MiB\n",
		Options{Columns: "timestamp,index,memory.used"}, formatCSV, []time.Time{at(0), at(5 * time.Second)}, 1, gpuReading(0, "", 6, 0, nan, nan, nan, nan)},
	{"no times: dmon taken --step apart", "# gpu    sm\n# Idx     %\n    0     5\n    0     6\n    0     7\n", Options{Step: 2 * time.Second}, formatDmon,
		nil, 1, gpuReading(0, "", 0, 0, 7, nan, nan, nan)}, // read from a file, its times are its modification time's: see TestUntimedStep

	// GPU-Z, gpustat, Afterburner.
	{"GPU-Z: old names, UTF-8", "        Date        , GPU Clock [MHz] , GPU Temperature [°C] , Memory Used [MB] , GPU Load [%] ,\n" +
		"2026-11-29 09:00:00 , 1500.0 , 40.0 , 100 , 3 ,\n2026-11-29 09:00:00 , 1500.0 , 41.0 , 101 , 4 ,\n2026-11-29 09:00:01 , 1500.0 , 42.0 , 102 , 5 ,\n",
		Options{}, formatGPUZ, []time.Time{at(0), at(500 * time.Millisecond), at(time.Second)}, 1, gpuReading(0, "", 102, 0, 5, 42, nan, nan)},
	{"gpustat: fan ?? and utilization ??", "node1  Sun Nov 29 09:00:00 2026  535.129.03\n[0] NVIDIA H100 | 31°C,  ?? %,  ?? % |  4 / 81559 MB |\n",
		Options{}, formatGpustat, []time.Time{at(0)}, 1, gpuReading(0, "NVIDIA H100", 4, 81559, nan, 31, nan, nan)},
	{"gpustat: a fan and the codec, no power", "node1  Sun Nov 29 09:00:00 2026  535.129.03\n[0] NVIDIA H100 | 31°C,  30 %,  12 % (E:   0 %  D:   0 %) |  4 / 81559 MB |\n",
		Options{}, formatGpustat, []time.Time{at(0)}, 1, gpuReading(0, "NVIDIA H100", 4, 81559, 12, 31, nan, nan)},
	{"Afterburner: a copy saved without its first line", "02, 29-11-2026 09:00:00, GPU usage ,Memory usage\n" +
		"80, 29-11-2026 09:00:00, 10.000 ,1000.000\n", Options{}, formatAfterburner, []time.Time{at(0)}, 1, gpuReading(0, "", 1000, 0, 10, nan, nan, nan)},
	{"Afterburner: two GPUs, power in watts, dots in the date", "00, 29.11.2026 09:00:00, Hardware monitoring log v1.5\n01, 29.11.2026 09:00:00, GPU A, GPU B\n" +
		"02, 29.11.2026 09:00:00, GPU1 temperature ,GPU1 usage ,GPU2 usage ,GPU2 memory usage ,Power\n03, 29.11.2026 09:00:00, 4 ,W ,0.000 ,300.000\n" +
		"80, 29.11.2026 09:00:00, 50.000 ,10.000 ,20.000 ,1000.000 ,N/A\n", Options{}, formatAfterburner, []time.Time{at(0)}, 2,
		gpuReading(1, "GPU B", 1000, 0, 20, nan, nan, nan)},
}

// table418Body is one GPU's table of driver 418, without the date line
// nvidia-smi prints above it.
const table418Body = "+-----------------------------------------------------------------------------+\n" +
	"| NVIDIA-SMI 418.87.01    Driver Version: 418.87.01    CUDA Version: 10.1     |\n" +
	"|-------------------------------+----------------------+----------------------+\n" +
	"| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n" +
	"| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n" +
	"|===============================+======================+======================|\n" +
	"|   0  Tesla V100-SXM2...  Off  | 00000000:00:07.0 Off |                    0 |\n" +
	"| N/A   50C    P0   200W / 300W |   8000MiB / 16130MiB |     95%      Default |\n" +
	"+-------------------------------+----------------------+----------------------+\n"

// TestLayoutVariants reads a variant of each new layout.
func TestLayoutVariants(t *testing.T) {
	for _, tt := range layoutVariants {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.log), "gpu.log", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			snaps, err := readUntil(r)
			if tt.times == nil { // dated by a file: a stream cannot be
				var perr *ParseError
				if !errors.As(err, &perr) || !strings.Contains(perr.Msg, "read from a stream") {
					t.Fatalf("got %v, want an error saying a stream cannot be dated", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tt.format {
				t.Errorf("got format %q, want %q", r.Format(), tt.format)
			}
			if len(snaps) != len(tt.times) {
				t.Fatalf("got %d snapshots, want %d", len(snaps), len(tt.times))
			}
			for i, s := range snaps {
				if !s.Time.Equal(tt.times[i]) {
					t.Errorf("snapshot %d at %v, want %v", i, s.Time, tt.times[i])
				}
			}
			last := snaps[len(snaps)-1]
			if len(last.Devices) != tt.gpus {
				t.Fatalf("got %d GPUs, want %d", len(last.Devices), tt.gpus)
			}
			for _, d := range last.Devices {
				if d.Index == tt.last.Index {
					if diff := diffDevice(d, tt.last); diff != "" {
						t.Error(diff)
					}
					return
				}
			}
			t.Errorf("no GPU %d in the last snapshot", tt.last.Index)
		})
	}
}

// readUntil reads snapshots up to the end or the first error.
func readUntil(r *Reader) ([]*gpu.Snapshot, error) {
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

// TestUntimedStep: logs without times are taken --step apart, the last at
// the file's modification time; dmon without --step 1 s apart.
func TestUntimedStep(t *testing.T) {
	mod := at(time.Hour)
	tests := []struct {
		name  string
		log   string
		step  time.Duration
		times []time.Time
		gpus  int
	}{
		{"dmon with --step", "# gpu    sm\n# Idx     %\n    0     5\n    1     5\n    0     6\n    1     6\n    0     7\n    1     7\n", 2 * time.Second,
			[]time.Time{mod.Add(-4 * time.Second), mod.Add(-2 * time.Second), mod}, 2},
		{"dmon without", "# gpu    sm\n# Idx     %\n    0     5\n    0     6\n", 0, []time.Time{mod.Add(-time.Second), mod}, 1},
		{"csv, one header, an index", "index, memory.used [MiB]\n0, 5 MiB\n1, 6 MiB\n0, 7 MiB\n1, 8 MiB\n", time.Minute,
			[]time.Time{mod.Add(-time.Minute), mod}, 2},
		{"csv, one header, no index: a GPU a row", "memory.used [MiB]\n5 MiB\n6 MiB\n7 MiB\n", 5 * time.Second,
			[]time.Time{mod.Add(-10 * time.Second), mod.Add(-5 * time.Second), mod}, 1},
		{"csv, the header before each sample, no index", "memory.used [MiB]\n5 MiB\n6 MiB\nmemory.used [MiB]\n7 MiB\n8 MiB\n", time.Second,
			[]time.Time{mod.Add(-time.Second), mod}, 2},
		{"csv without its header", "5 MiB, 0\n6 MiB, 1\n7 MiB, 0\n8 MiB, 1\n", time.Second, []time.Time{mod.Add(-time.Second), mod}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gpu.log")
			if err := os.WriteFile(path, []byte(tt.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, mod, mod); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, Options{Step: tt.step, Columns: "memory.used,index"})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			snaps, err := readUntil(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(snaps) != len(tt.times) {
				t.Fatalf("got %d snapshots, want %d", len(snaps), len(tt.times))
			}
			for i, s := range snaps {
				if !s.Time.Equal(tt.times[i]) || len(s.Devices) != tt.gpus {
					t.Errorf("snapshot %d: got %v with %d GPUs, want %v with %d", i, s.Time, len(s.Devices), tt.times[i], tt.gpus)
				}
			}
		})
	}
}

// TestRecognise: files that are no GPU log gpuwatch reads, but that it
// recognises, are named in the error, with why and what to log instead.
func TestRecognise(t *testing.T) {
	for _, tt := range []struct{ name, file, says string }{
		{"gpustat --json", `{"hostname": "node1", "driver_version": "535.129.03", "query_time": "2026-11-29T09:00:00", "gpus": [{"index": 0}]}`,
			"this is gpustat --json's output, which gpuwatch does not replay"},
		{"a JSON array", "[\n  {\"gpu\": 0, \"util\": 5}\n]\n", "this is a JSON file"},
		{"nvidia-smi -q -x", "<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log>\n",
			"this is nvidia-smi -q -x's XML report"},
		{"nvidia-smi -q", "\n==============NVSMI LOG==============\n\nTimestamp                                 : Sun Nov 29 09:00:00 2026\n",
			"this is nvidia-smi -q's report"},
		{"allocator lines", "step 100: torch.cuda.memory_allocated=1.20 GB, memory_reserved=2.00 GB\nstep 200: torch.cuda.memory_allocated=1.30 GB, memory_reserved=2.00 GB\n",
			"this is a PyTorch allocator's log"},
		{"allocator lines with times", "[2026-11-29 09:00:00] Allocated: 1.2 GB | Reserved: 2.0 GB | Max allocated: 3.1 GB\n",
			"this is a PyTorch allocator's log"},
		{"allocator CSV", "step,allocated_mb,reserved_mb\n100,1200,2000\n", "this is a PyTorch allocator's log"},
		{"binary", "\x00\x01\x02\x03GPU\x00", "this is a binary file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.file, Options{})
			var perr *ParseError
			if !errors.As(err, &perr) || !strings.Contains(perr.Msg, tt.says) || !strings.Contains(perr.Msg, "nvidia-smi --query-gpu=") {
				t.Fatalf("got %v, want an error saying %q and what to log instead", err, tt.says)
			}
		})
	}
	// A log with an allocator's column beside the GPU's readings is read.
	snaps, err := parse("timestamp, index, memory.used [MiB], torch_allocated_mb\n2026/11/29 09:00:00, 0, 5000 MiB, 4000\n", Options{})
	if err != nil || len(snaps) != 1 || snaps[0].Devices[0].MemUsed != 5000*mib {
		t.Errorf("got %v, %v; want the GPU's memory read, the allocator's column not", snaps, err)
	}
}

// TestScreenCapture: a terminal's screen, drawn and redrawn in place, is
// read as its frames.
func TestScreenCapture(t *testing.T) {
	const e = "\x1b"
	capture := e + "[?1049h" + e + "[H" + e + "[2J" + "Every 2.0s: date\r\n\r\nline one\r\nline two 10%\r\n" +
		e + "[1;30H" + e + "[1mx" + e + "[m" + e + "[4;10H" + "20%" + e + "[K" + // a frame redrawn: the title, then a cell
		e + "[1;30Hy" + e + "[3;1H" + e + "[2K" + "line 1" + e + "[4;12H" + e + "[1P" + // erased, rewritten, a character deleted
		e + "]0;title" + "\x07" + e + "[?1049l"
	r := newScreenReader(bufio.NewReader(strings.NewReader(capture)))
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "Every 2.0s: date\n\nline one\nline two 10%\n\n" +
		"Every 2.0s: date             x\n\nline one\nline two 20%\n\n" +
		"Every 2.0s: date             y\n\nline 1\nline two 20\n\n"
	if string(got) != want {
		t.Errorf("got frames\n%q\nwant\n%q", got, want)
	}
	if !isScreenCapture([]byte(capture)) || isScreenCapture([]byte("plain "+e+"[1mbold"+e+"[m text")) {
		t.Error("isScreenCapture: got a capture not told from colours")
	}
	// Frames far larger than the capture are not a screen.
	var bomb strings.Builder
	for row := 1; row <= maxScreenRows; row++ {
		fmt.Fprintf(&bomb, e+"[%d;%dHx", row, maxScreenCols)
	}
	bomb.WriteString(strings.Repeat(e+"[2;1Hx"+e+"[H", 100))
	_, err = io.ReadAll(newScreenReader(bufio.NewReader(strings.NewReader(bomb.String()))))
	if _, ok := err.(*textError); !ok {
		t.Errorf("got %v, want a capture that draws too much refused", err)
	}
}

// TestBursts: samples of a GPU within one second are spread over it when
// the times say seconds, never when they say fractions; a burst too long
// to be one stays in time order.
func TestBursts(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp, index, utilization.gpu [%]\n")
	for range 3 {
		b.WriteString("2026/11/29 09:00:00, 0, 5 %\n")
	}
	b.WriteString("2026/11/29 09:00:01, 0, 5 %\n")
	snaps, err := parse(b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, time.Second / 3, 2 * time.Second / 3, time.Second}
	for i, s := range snaps {
		if !s.Time.Equal(at(want[i])) {
			t.Errorf("snapshot %d at %v, want %v", i, s.Time, at(want[i]))
		}
	}
	fine, err := parse(strings.ReplaceAll(b.String(), ":00, 0", ":00.000, 0"), Options{})
	if err != nil || !fine[1].Time.Equal(at(0)) {
		t.Errorf("times with milliseconds: got %v, %v; want the log's own times", fine, err)
	}
	b.Reset()
	b.WriteString("timestamp, index, utilization.gpu [%]\n")
	for range maxBurst + 5 {
		b.WriteString("2026/11/29 09:00:00, 0, 5 %\n")
	}
	long, err := parse(b.String(), Options{})
	if err != nil || len(long) != maxBurst+5 {
		t.Fatalf("got %d snapshots, %v; want %d", len(long), err, maxBurst+5)
	}
	for i := 1; i < len(long); i++ {
		if long[i].Time.Before(long[i-1].Time) {
			t.Fatalf("snapshot %d at %v goes back from %v", i, long[i].Time, long[i-1].Time)
		}
	}
}
