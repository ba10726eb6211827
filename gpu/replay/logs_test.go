package replay

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// sampleLog is one of testdata/logs: a log in one of the formats people
// keep, and what reading it must give.
type sampleLog struct {
	file    string
	columns string        // --columns, for a log without its header
	step    time.Duration // --step, for a log without times
	mod     time.Time     // when the file was last written, for a log dated by it
	format  string
	host    string
	snaps   int
	gpus    int
	first   time.Time
	last    time.Time
	spots   []logSpot
}

// logSpot is a GPU's readings the reader must find in one snapshot. NaN
// readings must be unknown; a zero MemTotal, unknown memory.
type logSpot struct {
	snap int
	dev  gpu.Device
}

// at is 2026-11-29 09:MM:SS UTC plus d, the start of every sample log.
func at(d time.Duration) time.Time { return time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).Add(d) }

// gpuReading is a device with the readings a spot checks; the rest unknown.
func gpuReading(index int, name string, usedMiB, totalMiB uint64, util, temp, power, limit float64) gpu.Device {
	return gpu.Device{Index: index, Name: name, MemUsed: usedMiB * mib, MemTotal: totalMiB * mib, UtilGPU: util, UtilMem: nan,
		TempC: temp, PowerW: power, PowerLimitW: limit}
}

// SampleLogs lists testdata/logs, which testdata/logs/README.md describes;
// the CLI's tests replay and digest the same files.
var sampleLogs = []sampleLog{
	{file: "smi-one-gpu.csv", format: formatCSV, host: "smi-one-gpu", snaps: 120, gpus: 1,
		first: at(0), last: at(595 * time.Second), spots: []logSpot{
			{0, gpuReading(0, "NVIDIA GeForce RTX 3090", 2000, 24576, 90, 60, nan, nan)},
			{119, gpuReading(0, "NVIDIA GeForce RTX 3090", 2991, 24576, 90, 64, nan, nan)},
		}},
	{file: "smi-nounits-reserved.csv", format: formatCSV, host: "smi-nounits-reserved", snaps: 60, gpus: 2,
		first: at(0), last: at(590 * time.Second), spots: []logSpot{
			{59, withReserved(gpuReading(0, h100, 2983, 81559, 80, nan, 350.5, 700), 522)},
			{59, withReserved(gpuReading(1, h100, 30000, 81559, 95, nan, 351.5, 700), 522)},
		}},
	{file: "smi-noheader.csv", columns: "timestamp,index,memory.used,memory.total,utilization.gpu", format: formatCSV,
		host: "smi-noheader", snaps: 30, gpus: 2, first: at(0), last: at(29 * time.Minute), spots: []logSpot{
			{29, gpuReading(0, "", 3900, 40960, 50, nan, nan, nan)},
			{29, gpuReading(1, "", 500, 40960, 0, nan, nan, nan)},
		}},
	{file: "smi-loop-date-crlf.log", format: formatCSV, host: "smi-loop-date-crlf", snaps: 20, gpus: 2,
		first: at(0), last: at(19 * time.Minute), spots: []logSpot{
			{19, gpuReading(1, "Tesla V100-SXM2-32GB", 5950, 32510, 31, 51, nan, nan)},
		}},
	{file: "smi-powershell-utf16.csv", format: formatCSV, host: "smi-powershell-utf16", snaps: 15, gpus: 1,
		first: at(0), last: at(7 * time.Minute), spots: []logSpot{
			{14, gpuReading(0, "NVIDIA GeForce RTX 4090", 3140, 24564, 14, nan, nan, nan)},
		}},
	{file: "smi-iso-bom.csv", format: formatCSV, host: "smi-iso-bom", snaps: 40, gpus: 1,
		first: at(-time.Hour), last: at(-time.Hour + 585*time.Second), spots: []logSpot{
			{39, gpuReading(0, "", 2500, 40960, 73, nan, nan, nan)},
		}},
	{file: "smi-mdy.csv", format: formatCSV, host: "smi-mdy", snaps: 10, gpus: 1,
		first: at(0), last: at(9 * time.Minute), spots: []logSpot{
			{9, gpuReading(0, "", 1209, 16384, nan, nan, nan, nan)},
		}},
	{file: "cron-30min.log", format: formatCSV, host: "cron-30min", snaps: 96, gpus: 4,
		first: at(0), last: at(95 * 30 * time.Minute), spots: []logSpot{
			{10, withUUID(gpuReading(2, "NVIDIA A100-SXM4-40GB", 38000, 40960, 0, 35, 60, nan), "GPU-00000002-aaaa-bbbb-cccc-ddddeeeeffff")},
			{62, withUUID(gpuReading(2, "NVIDIA A100-SXM4-40GB", 3, 40960, 0, 35, 60, nan), "GPU-00000002-aaaa-bbbb-cccc-ddddeeeeffff")},
		}},
	{file: "smi-two-gpus-no-index.csv", format: formatCSV, host: "smi-two-gpus-no-index", snaps: 20, gpus: 2,
		first: at(0), last: at(95 * time.Second), spots: []logSpot{
			{19, gpuReading(0, "", 1000, 24576, 0, nan, nan, nan)},
			{19, gpuReading(1, "", 2000, 24576, 50, nan, nan, nan)},
		}},
	{file: "pynvml-logger.csv", format: formatCSV, host: "pynvml-logger", snaps: 50, gpus: 2,
		first: at(250 * time.Millisecond), last: at(98*time.Second + 250*time.Millisecond), spots: []logSpot{
			{49, withUtilMem(gpuReading(1, "NVIDIA A100 80GB PCIe", 6080, 81920, 71, 56, 251.125, nan), 30)},
		}},
	{file: "gputil-logger.csv", format: formatCSV, host: "gputil-logger", snaps: 40, gpus: 1,
		first: at(123456 * time.Microsecond), last: at(390*time.Second + 123456*time.Microsecond), spots: []logSpot{
			{3, withUUID(gpuReading(0, "Tesla T4", 7680, 15360, 30, 45, nan, nan), "GPU-7c7a4b58-0000-1111-2222-333344445555")}, // load 0.30
		}},
	{file: "script-units.csv", format: formatCSV, host: "script-units", snaps: 30, gpus: 2,
		first: at(0), last: at(29 * time.Minute), spots: []logSpot{
			{29, gpuReading(1, "NVIDIA RTX A6000", 10290, 49140, 41, 60, 200.5, nan)},
		}},
	{file: "nvitop-collector.csv", format: formatCSV, host: "nvitop-collector", snaps: 25, gpus: 2,
		first: at(0), last: at(120 * time.Second), spots: []logSpot{
			{24, gpuReading(0, "", 1960, 81559, 80, 50, 300, nan)}, // the means, not the maxima
			{24, gpuReading(1, "", 11960, 81559, 81, 51, 301, nan)},
		}},
	{file: "gpustat-fields.csv", format: formatCSV, host: "gpustat-fields", snaps: 20, gpus: 2,
		first: at(0), last: at(570 * time.Second), spots: []logSpot{
			{19, withUUID(gpuReading(1, "NVIDIA L40S", 20001, 46068, 61, 41, 181, 350), "GPU-5a5a5a51-1111-2222-3333-444455556666")},
		}},
	{file: "mem-only.csv", format: formatCSV, host: "mem-only", snaps: 20, gpus: 1,
		first: at(0), last: at(19 * time.Minute), spots: []logSpot{
			{19, gpuReading(0, "", 7800, 0, nan, nan, nan, nan)}, // memory.used known, the total not
		}},
	{file: "table-418.log", format: formatTable, host: "table-418", snaps: 30, gpus: 2,
		first: at(0), last: at(29 * time.Minute), spots: []logSpot{
			{29, withProcs(gpuReading(0, "Tesla V100-SXM2...", 13800, 16130, 95, 52, 200, 300), gpu.Process{PID: 41234, Command: "python", MemUsed: 13790 * mib})},
			{29, gpuReading(1, "Tesla V100-SXM2...", 0, 16130, 0, 33, 40, 300)},
		}},
	{file: "table-384-cron.log", format: formatTable, host: "table-384-cron", snaps: 24, gpus: 1,
		first: at(time.Second), last: at(115*time.Minute + time.Second), spots: []logSpot{
			{0, gpuReading(0, "GeForce GTX 108...", 11000, 11178, 0, 40, 60, 250)},
			{23, gpuReading(0, "GeForce GTX 108...", 2, 11178, 0, 40, 60, 250)},
		}},
	{file: "table-470-mig.log", format: formatTable, host: "table-470-mig", snaps: 20, gpus: 2,
		first: at(0), last: at(190 * time.Second), spots: []logSpot{
			{0, withProcs(gpuReading(0, "NVIDIA A100-SXM...", 20012, 40536, 45, 31, 61, 400), gpu.Process{PID: 12345, Command: "python train.py", MemUsed: 20000 * mib})},
			{0, gpuReading(1, "NVIDIA A100-SXM...", 3, 40536, 0, nan, 55, 400)}, // temperature N/A
		}},
	{file: "table-535-cron.log", format: formatTable, host: "table-535-cron", snaps: 48, gpus: 8,
		first: at(0), last: at(47 * 30 * time.Minute), spots: []logSpot{
			{10, withProcs(gpuReading(5, h100, 40000, 81559, 0, 30, 70, 700), gpu.Process{PID: 200005, Command: "jupyter-kernel", MemUsed: 39500 * mib})},
			{47, gpuReading(7, h100, 4, 81559, 0, 30, 70, 700)},
		}},
	{file: "table-550-watch.log", format: formatTable, host: "node7", snaps: 12, gpus: 1, // the host in watch's title
		first: at(0), last: at(22 * time.Second), spots: []logSpot{
			{11, gpuReading(0, "NVIDIA A100-SXM4-80GB", 1, 81920, 0, 30, 61, 400)},
		}},
	{file: "dmon-default.log", format: formatDmon, host: "dmon-default", snaps: 30, gpus: 2, mod: at(29 * time.Second), // times from the file's modification time
		first: at(0), last: at(29 * time.Second), spots: []logSpot{
			{29, withUtilMem(gpuReading(0, "", 0, 0, 90, 60, 300, nan), 40)},
		}},
	{file: "dmon-dt.log", format: formatDmon, host: "dmon-dt", snaps: 40, gpus: 2,
		first: at(0), last: at(39 * time.Second), spots: []logSpot{
			{39, withUtilMem(gpuReading(0, "", 31950, 0, 99, 55, 250, nan), 30)}, // fb, without a total
		}},
	{file: "dmon-old-hourly.log", format: formatDmon, host: "dmon-old-hourly", snaps: 10, gpus: 1,
		first: at(0), last: at(9 * time.Hour), spots: []logSpot{
			{9, withUtilMem(gpuReading(0, "", 0, 0, 0, 35, 25, nan), 0)},
		}},
	{file: "gpustat.log", format: formatGpustat, host: "gpu-node3", snaps: 18, gpus: 2,
		first: at(0), last: at(170 * time.Minute), spots: []logSpot{
			{0, withProcs(gpuReading(1, "NVIDIA GeForce RTX 4090", 12000, 24564, 0, 31, 20, 450),
				gpu.Process{PID: 777, User: "bob", Command: "jupyter", MemUsed: 11990 * mib}, gpu.Process{PID: 778, User: "carol", Command: "python", MemUsed: 10 * mib})},
			{17, gpuReading(1, "NVIDIA GeForce RTX 4090", 2, 24564, 0, 31, 20, 450)},
		}},
	{file: "gpustat-nofan.log", format: formatGpustat, host: "dgx2", snaps: 10, gpus: 2,
		first: at(0), last: at(45 * time.Minute), spots: []logSpot{
			{9, withProcs(gpuReading(0, "Tesla V100-SXM2-32GB", 4009, 32510, 54, 36, nan, nan), gpu.Process{User: "alice", MemUsed: 3990 * mib})}, // the fan ??
			{9, withProcs(gpuReading(1, "Tesla V100-SXM2-32GB", 20000, 32510, 80, 40, 250, 300), gpu.Process{User: "bob", MemUsed: 19990 * mib})}, // and the codec
		}},
	{file: "script-lines.log", format: formatText, host: "script-lines", snaps: 20, gpus: 2,
		first: at(0), last: at(190 * time.Second), spots: []logSpot{
			{19, gpuReading(0, "NVIDIA GeForce RTX 3090", 8190, 24576, 49, 61, nan, nan)},
			{19, gpuReading(1, "NVIDIA GeForce RTX 3090", 95, 24576, 0, 35, nan, nan)},
		}},
	{file: "script-pipes.log", format: formatCSV, host: "script-pipes", snaps: 15, gpus: 1,
		first: at(0), last: at(14 * time.Minute), spots: []logSpot{
			{14, gpuReading(0, "", 2400, 0, 24, 42, nan, nan)},
		}},
	{file: "script-blocks.log", format: formatText, host: "script-blocks", snaps: 12, gpus: 2,
		first: at(0), last: at(55 * time.Minute), spots: []logSpot{
			{11, gpuReading(0, "NVIDIA A100-SXM4-40GB", 20011, 40960, 90, 50, 300.5, 400)},
			{11, gpuReading(1, "NVIDIA A100-SXM4-40GB", 3, 40960, 0, 35, 55, 400)},
		}},
	{file: "script-status.log", format: formatText, host: "script-status", snaps: 10, gpus: 2,
		first: at(0), last: at(270 * time.Second), spots: []logSpot{
			{9, gpuReading(0, "NVIDIA GeForce RTX 4090", 8604, 24564, 49, 61, 250.12, nan)}, // by their units
			{9, gpuReading(1, "NVIDIA GeForce RTX 4090", 2, 24564, 0, 30, 20.5, nan)},
		}},
	{file: "script-logging.log", format: formatText, host: "script-logging", snaps: 16, gpus: 2,
		first: at(250 * time.Millisecond), last: at(225*time.Second + 250*time.Millisecond), spots: []logSpot{
			{15, gpuReading(0, "", 9728, 24576, 75, 60, 250, 450)}, // 9.5 of 24.0 GB; the allocator's lines not read
			{15, gpuReading(1, "", 512, 24576, 0, 31, 21, 450)},
		}},
	{file: "script-clock.log", format: formatText, host: "script-clock", snaps: 10, gpus: 1, mod: at(-8*time.Hour - 57*time.Minute - 30*time.Second),
		first: at(-9*time.Hour - 2*time.Minute), last: at(-8*time.Hour - 57*time.Minute - 30*time.Second), spots: []logSpot{ // across midnight
			{9, withMemBytes(gpuReading(0, "", 0, 24576, 79, 60, nan, nan), 9985798963)}, // 9.3 of 24.0 GB
		}},
	{file: "smi-decorated-dates.log", format: formatCSV, host: "smi-decorated-dates", snaps: 10, gpus: 2,
		first: at(0), last: at(9 * time.Minute), spots: []logSpot{
			{9, gpuReading(0, "NVIDIA L4", 1009, 23034, 90, nan, nan, nan)},
		}},
	{file: "smi-clock-lines.log", format: formatCSV, host: "smi-clock-lines", snaps: 10, gpus: 1, mod: at(10 * time.Minute),
		first: at(0), last: at(9 * time.Minute), spots: []logSpot{
			{9, gpuReading(0, "", 509, 15360, 9, nan, nan, nan)},
		}},
	{file: "table-then-csv.log", format: formatTable + ", then " + formatCSV, host: "table-then-csv", snaps: 10, gpus: 1,
		first: at(0), last: at(9 * time.Minute), spots: []logSpot{
			{2, withProcs(gpuReading(0, h100, 40002, 81559, 90, 45, 600, 700), gpu.Process{PID: 123456, Command: "python train.py", MemUsed: 39992 * mib})},
			{3, gpuReading(0, h100, 40003, 81559, 90, nan, nan, nan)},
		}},
	{file: "table-nohup.log", format: formatTable, host: "table-nohup", snaps: 8, gpus: 1,
		first: at(0), last: at(35 * time.Minute), spots: []logSpot{
			{3, withProcs(gpuReading(0, h100, 30000, 81559, 99, 45, 600, 700), gpu.Process{PID: 123456, Command: "python train.py", MemUsed: 29990 * mib})},
			{7, gpuReading(0, h100, 5, 81559, 0, 45, 600, 700)},
		}},
	{file: "watch-escapes.log", format: formatTable, host: "node9", snaps: 6, gpus: 1,
		first: at(0), last: at(10 * time.Second), spots: []logSpot{
			{0, withProcs(gpuReading(0, h100, 20000, 81559, 50, 45, 600, 700), gpu.Process{PID: 123456, Command: "python train.py", MemUsed: 19990 * mib})},
			{5, withProcs(gpuReading(0, h100, 25000, 81559, 55, 45, 600, 700), gpu.Process{PID: 123456, Command: "python train.py", MemUsed: 24990 * mib})},
		}},
	{file: "smi-untimed.csv", step: 2 * time.Second, mod: at(10 * time.Minute), format: formatCSV, host: "smi-untimed", snaps: 15, gpus: 2,
		first: at(10*time.Minute - 28*time.Second), last: at(10 * time.Minute), spots: []logSpot{
			{14, gpuReading(0, "Tesla T4", 3014, 15360, 14, nan, nan, nan)},
			{14, gpuReading(1, "Tesla T4", 0, 15360, 0, nan, nan, nan)},
		}},
	{file: "smi-twice.csv", format: formatCSV, host: "smi-twice", snaps: 10, gpus: 2,
		first: at(0), last: at(45 * time.Second), spots: []logSpot{
			{9, gpuReading(0, "", 7009, 16384, 30, nan, nan, nan)},
		}},
	{file: "smi-two-widths.csv", columns: "timestamp,index,memory.used,memory.total", format: formatCSV, host: "smi-two-widths", snaps: 20, gpus: 2,
		first: at(0), last: at(19 * time.Minute), spots: []logSpot{
			{9, gpuReading(1, "", 2009, 40960, nan, nan, nan, nan)},
			{19, gpuReading(1, "", 2019, 40960, nan, nan, nan, nan)}, // two more fields behind, not read
		}},
	{file: "gpuz-sensor.txt", format: formatGPUZ, host: "gpuz-sensor", snaps: 30, gpus: 1, // one GPU, rows of one second spread over it
		first: at(0), last: at(27 * time.Second), spots: []logSpot{
			{6, withUtilMem(gpuReading(0, "", 8006, 0, 91, 60, 306, nan), 40)},
		}},
	{file: "afterburner.hml", format: formatAfterburner, host: "afterburner", snaps: 20, gpus: 1,
		first: at(0), last: at(19 * time.Second), spots: []logSpot{
			{19, withUtilMem(gpuReading(0, "NVIDIA GeForce RTX 3080", 9019, 10240, 0, 56, nan, nan), 43)}, // the total from the name; Power in % not read
		}},
}

func withReserved(d gpu.Device, mibs uint64) gpu.Device { d.MemReserved = mibs * mib; return d }
func withUtilMem(d gpu.Device, u float64) gpu.Device    { d.UtilMem = u; return d }
func withMemBytes(d gpu.Device, used uint64) gpu.Device { d.MemUsed = used; return d }
func withUUID(d gpu.Device, uuid string) gpu.Device     { d.UUID = uuid; return d }
func withProcs(d gpu.Device, ps ...gpu.Process) gpu.Device {
	d.Processes = ps
	return d
}

// TestSampleLogs reads every sample log: its format is detected from its
// first lines, and the snapshots, GPUs, times and readings are the ones
// it holds.
func TestSampleLogs(t *testing.T) {
	files, err := filepath.Glob("testdata/logs/*.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Ext(f) == ".md" {
			continue
		}
		if !slices.ContainsFunc(sampleLogs, func(l sampleLog) bool { return l.file == filepath.Base(f) }) {
			t.Errorf("%s has no expectations in sampleLogs", f)
		}
	}
	for _, tt := range sampleLogs {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "logs", tt.file)
			if !tt.mod.IsZero() {
				path = withModTime(t, path, tt.mod) // a log without times, or dates, is dated by its file
			}
			r, err := Open(path, Options{Columns: tt.columns, Step: tt.step})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			snaps := readAll(t, r)
			if r.Format() != tt.format || r.Host() != tt.host {
				t.Errorf("got format %q of host %q, want %q of %q", r.Format(), r.Host(), tt.format, tt.host)
			}
			if len(snaps) != tt.snaps {
				t.Fatalf("got %d snapshots, want %d", len(snaps), tt.snaps)
			}
			for i, s := range snaps {
				if len(s.Devices) != tt.gpus {
					t.Fatalf("snapshot %d: got %d GPUs, want %d", i, len(s.Devices), tt.gpus)
				}
				for j, d := range s.Devices {
					if d.Index != j {
						t.Fatalf("snapshot %d: GPU %d has index %d", i, j, d.Index)
					}
				}
				if s.Host != tt.host {
					t.Fatalf("snapshot %d: got host %q, want %q", i, s.Host, tt.host)
				}
			}
			if !snaps[0].Time.Equal(tt.first) || !snaps[len(snaps)-1].Time.Equal(tt.last) {
				t.Errorf("got times %v to %v, want %v to %v", snaps[0].Time, snaps[len(snaps)-1].Time, tt.first, tt.last)
			}
			for _, sp := range tt.spots {
				got := snaps[sp.snap].Devices[sp.dev.Index]
				if d := diffDevice(got, sp.dev); d != "" {
					t.Errorf("snapshot %d: %s", sp.snap, d)
				}
				if got.MemReserved != sp.dev.MemReserved {
					t.Errorf("snapshot %d GPU %d: got MemReserved %d, want %d", sp.snap, sp.dev.Index, got.MemReserved, sp.dev.MemReserved)
				}
				if !slices.Equal(got.Processes, sp.dev.Processes) {
					t.Errorf("snapshot %d GPU %d: got processes %+v, want %+v", sp.snap, sp.dev.Index, got.Processes, sp.dev.Processes)
				}
			}
			if r.Skipped() != 0 {
				t.Errorf("got %d rows skipped, want 0", r.Skipped())
			}
		})
	}
}

// withModTime copies a file into a temporary folder, last written at mod.
func withModTime(t *testing.T, path string, mod time.Time) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(cp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(cp, mod, mod); err != nil {
		t.Fatal(err)
	}
	return cp
}
