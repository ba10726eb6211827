package replay

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFormatErrors: a malformed line of every format stops the reader with
// FILE:LINE:COL and what is wrong; with SkipBad it is skipped and counted.
func TestFormatErrors(t *testing.T) {
	const table = "Sun Nov 29 09:00:00 2026\n" +
		"+-----------------------------------------------------------------------------+\n" +
		"| NVIDIA-SMI 418.87.01    Driver Version: 418.87.01    CUDA Version: 10.1     |\n" +
		"|-------------------------------+----------------------+----------------------+\n" +
		"| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n" +
		"| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n" +
		"|===============================+======================+======================|\n" +
		"|   0  Tesla V100-SXM2...  Off  | 00000000:00:07.0 Off |                    0 |\n" +
		"| N/A   50C    P0   200W / 300W |   8000MiB / 16130MiB |     95%      Default |\n" +
		"+-------------------------------+----------------------+----------------------+\n"
	const dmon = "2026-11-29 09:00:00\n# gpu    pwr  gtemp  mtemp     sm    mem\n# Idx      W      C      C      %      %\n"
	tests := []struct {
		name  string
		log   string
		opts  Options
		line  int
		col   int
		msg   string
		snaps int // read with SkipBad
	}{
		{"table: memory that is no amount", table + strings.Replace(table, "8000MiB", "lots", 1)[25:], Options{}, 18, 37,
			`memory used: "lots" is not a number`, 1},
		{"table: text in the frame", table + "Processes? none\n", Options{}, 11, 1, `"Processes? none" is not part of nvidia-smi's table`, 1},
		{"table without its date line", table[25:], Options{}, 7, 1, "a table without its date line", 0},
		{"dmon: a line cut short", dmon + "    0     71     31      -\n    0     71     31      -     97     43\n", Options{}, 4, 27,
			"the line has 4 values, dmon's header has 6 columns", 1},
		{"dmon: a value that is no number", dmon + "    0     7x     31      -     97     43\n    0     71     31      -     97     43\n", Options{}, 4, 11,
			`pwr: "7x" is not a number`, 1},
		{"dmon: a line before its header", "2026-11-29 09:00:00\n    0     71     31      -     97     43\n" + dmon[20:], Options{}, 2, 1, "a dmon line before dmon's header", 0},
		{"gpustat: a GPU before the title", "[0] NVIDIA H100 | 31°C,   0 % |     4 / 81559 MB |\n", Options{}, 1, 1,
			"a GPU's line before gpustat's title line", 0},
		{"gpustat: memory that is no amount", "node1  Sun Nov 29 09:00:00 2026  535.129.03\n[0] NVIDIA H100 | 31°C,   0 % |     4 / lots MB |\n" +
			"[1] NVIDIA H100 | 31°C,   0 % |     4 / 81559 MB |\n", Options{}, 2, 1, `memory "4 / lots MB" is not USED / TOTAL MB`, 1},
		{"csv under date lines: a row before any date", "index, memory.used [MiB]\n0, 5 MiB\nSun Nov 29 09:00:00 UTC 2026\n0, 6 MiB\n", Options{}, 2, 1,
			"the row has no time: the header has no timestamp column and no date line came before the row", 1},
		{"csv without its header: a row of other columns", "2026/11/29 09:00:00, 0, 5 MiB\n2026/11/29 09:00:05, 0\n",
			Options{Columns: "timestamp,index,memory.used"}, 2, 23, "row has 2 fields, the header has 3", 1},
		{"csv: a column asked for twice, whose values differ", "timestamp, index, memory.used [MiB], memory.used [MiB]\n" +
			"2026/11/29 09:00:00, 0, 5 MiB, 6 MiB\n2026/11/29 09:00:05, 0, 5 MiB, 5 MiB\n", Options{}, 2, 32,
			`memory.used [MiB] is in columns 3 and 4, and they differ: "5 MiB" and "6 MiB"`, 1},
		{"csv without its header: rows of another width that fit neither way", "2026/11/29 09:00:00, 0, 5 MiB\n" +
			"7 %, 2026/11/29 09:00:05, 0, 5 MiB, 9 %\n2026/11/29 09:00:10, 0, 5 MiB\n", Options{Columns: "timestamp,index,memory.used"}, 2, 1,
			"rows of 3 and 5 fields: --columns names 3 columns, and this row's values fit them with the 2 extra fields in front or behind neither way", 2},
		{"csv without times or --step", "index, memory.used [MiB]\n0, 5 MiB\n", Options{}, 2, 1, "no times in this log: give --step", 0},
		{"csv without times, --step, read from a stream", "index, memory.used [MiB]\n0, 5 MiB\n", Options{Step: time.Second}, 2, 1,
			"no times in this log, read from a stream: replay the file itself", 0},
		{"script lines: readings without a time", "GPU 0: util 45%, mem 500 MiB\n[2026-11-29 09:00:00] GPU 0: util 45%, mem 500 MiB\n", Options{}, 1, 1,
			"the line has GPU readings but no time", 1},
		{"script lines: values whose units leave them in doubt", "[2026-11-29 09:00:00] GPU Status:\n0, 45 %, 30 %, 500 MiB\n" +
			"[2026-11-29 09:00:05] GPU Status:\n0, 45 %, 500 MiB\n", Options{}, 2, 1, "values without names whose units leave their readings in doubt", 1},
		{"afterburner: a time that is not one", "00, 29-11-2026 09:00:00, Hardware monitoring log v1.6\n02, 29-11-2026 09:00:00, GPU usage\n" +
			"80, 31-02-2026 09:00:00, 50.000\n80, 29-11-2026 09:00:01, 50.000\n", Options{}, 3, 5, `"31-02-2026 09:00:00" is not a time`, 1},
		{"wide csv: a value that is no number", "timestamp,gpu0_util,gpu1_util\n2026-11-29T09:00:00,5,x\n2026-11-29T09:00:05,5,6\n", Options{}, 2, 23,
			`gpu1_util: "x" is not a number`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.log, tt.opts)
			perr, ok := errors.AsType[*ParseError](err)
			if !ok {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if perr.File != "gpu.csv" || perr.Line != tt.line || perr.Col != tt.col || !strings.Contains(perr.Msg, tt.msg) {
				t.Errorf("got %v, want gpu.csv:%d:%d: …%s…", perr, tt.line, tt.col, tt.msg)
			}
			opts := tt.opts
			opts.SkipBad = true
			r, err := NewReader(strings.NewReader(tt.log), "gpu.csv", opts)
			if err != nil {
				t.Fatal(err)
			}
			if snaps := readAll(t, r); len(snaps) != tt.snaps || r.Skipped() == 0 {
				t.Errorf("with SkipBad: got %d snapshots and %d skipped, want %d and the bad line skipped", len(snaps), r.Skipped(), tt.snaps)
			}
		})
	}
}

// TestDetectTriesEveryFormat: a log that fits no format gets one error
// naming each format tried.
func TestDetectTriesEveryFormat(t *testing.T) {
	_, err := parse("\n\nhello world\nsecond line\n", Options{})
	perr, ok := errors.AsType[*ParseError](err)
	if !ok || perr.Line != 3 || perr.Col != 1 {
		t.Fatalf("got %v, want an error at gpu.csv:3:1", err)
	}
	for _, tried := range []string{`"hello world"`, "a CSV header naming GPU readings", "needs --columns", "nvidia-smi's table", "dmon's header", "gpustat",
		"GPU-Z sensor log", "MSI Afterburner log", "a script's lines with a time and named readings", "with commas or |"} {
		if !strings.Contains(perr.Msg, tried) {
			t.Errorf("got %q, want it to say %q", perr.Msg, tried)
		}
	}
}

// TestNotes: columns gpuwatch does not read are named, once; so is a
// memory total taken from a GPU's name.
func TestNotes(t *testing.T) {
	var out strings.Builder
	log := "timestamp, index, name, fan.speed [%], pstate, memory.used [MiB]\n" +
		"2026/11/29 09:00:00, 0, Tesla T4, 30 %, P0, 500 MiB\n" +
		"2026/11/29 09:00:05, 0, Tesla T4, 30 %, P0, 600 MiB\n"
	snaps, err := parse(log, Options{Warnings: &out})
	if err != nil {
		t.Fatal(err)
	}
	want := "note: gpu.csv: columns gpuwatch does not read, ignored: pstate\n" +
		"note: gpu.csv: memory.total is not in the log: taking 16 GiB for Tesla T4 from its name (give --memory-total to say otherwise)\n"
	if out.String() != want {
		t.Errorf("got notes\n%s\nwant\n%s", out.String(), want)
	}
	if d := snaps[1].Devices[0]; d.MemTotal != 16<<30 || d.MemUsed != 600*mib {
		t.Errorf("got memory %d of %d, want 600 MiB of 16 GiB", d.MemUsed, d.MemTotal)
	}
}

func TestKnownMemory(t *testing.T) {
	for name, gib := range map[string]uint64{
		"NVIDIA H100 80GB HBM3": 80, "NVIDIA A100-SXM4-40GB": 40, "Tesla T4": 16, "NVIDIA GeForce RTX 3090": 24,
		"NVIDIA GeForce RTX 3080 Ti": 12, "NVIDIA H100 NVL": 94, "NVIDIA L40S": 48, "NVIDIA L4": 24, "Tesla V100-SXM2-32GB": 32,
		"NVIDIA RTX 6000 Ada Generation": 48, "Quadro RTX 8000": 48, "Some Future GPU": 0,
	} {
		got, ok := KnownMemory(name)
		if got != gib<<30 || ok != (gib > 0) {
			t.Errorf("KnownMemory(%q) = %d GiB, %v; want %d GiB", name, got>>30, ok, gib)
		}
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]uint64{"80GiB": 80 << 30, "24576 MiB": 24576 << 20, "24GB": 24 << 30, "1.5 GiB": 3 << 29, "80": 0, "x": 0, "0GiB": 0} {
		got, err := ParseMemory(in)
		if got != want || (err == nil) != (want > 0) {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestHostFromPath(t *testing.T) {
	for in, want := range map[string]string{"logs/node8.csv.gz": "node8", "gpu-box.log": "gpu-box", "-": "", "a.b.c/node3.txt": "node3",
		"node1.example.com.csv": "node1.example.com"} {
		if got := HostFromPath(in); got != want {
			t.Errorf("HostFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}
