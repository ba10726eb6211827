package replay

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchGPUs and benchSamples size the logs the layout benchmarks read: an
// 8-GPU server sampled 2,000 times.
const (
	benchGPUs    = 8
	benchSamples = 2000
)

// benchLayout writes a log of one layout: the text before the samples,
// and each sample's text given its number and time.
type benchLayout struct {
	name    string
	columns string
	head    string
	sample  func(w *bytes.Buffer, n int, t time.Time)
}

var benchStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

var benchLayouts = []benchLayout{
	{name: "nvidia-smi-csv", head: header10, sample: func(w *bytes.Buffer, n int, t time.Time) {
		for g := range benchGPUs {
			fmt.Fprintf(w, "%s, %d, %s, GPU-%08d-d8f1-6adf-91b7-584a2265b1f5, %d, %d %%, %d %%, %d MiB, 81559 MiB, %.2f W\n",
				t.Add(time.Duration(3*g)*time.Millisecond).Format(timeLayout), g, h100, g, 40+n%20, n%100, n%50, 1000+n%70000, 60+float64(n%600)/1.7)
		}
	}},
	{name: "noheader-nounits", columns: "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw", sample: func(w *bytes.Buffer, n int, t time.Time) {
		for g := range benchGPUs {
			fmt.Fprintf(w, "%s, %d, %d, %d, 81559, %.2f\n", t.Add(time.Duration(3*g)*time.Millisecond).Format(timeLayout), g, n%100, 1000+n%70000, 60+float64(n%600)/1.7)
		}
	}},
	{name: "script-csv", head: "timestamp,gpu_index,gpu_name,gpu_util,memory_used_mb,memory_total_mb,temperature_c,power_w\n",
		sample: func(w *bytes.Buffer, n int, t time.Time) {
			for g := range benchGPUs {
				fmt.Fprintf(w, "%.6f,%d,NVIDIA A100 80GB PCIe,%d,%d,81920,%d,%.3f\n", float64(t.UnixNano())/1e9, g, n%100, 1000+n%70000, 40+n%20, 60+float64(n%600)/1.7)
			}
		}},
	{name: "nvitop-wide", head: nvitopHeader(), sample: func(w *bytes.Buffer, n int, t time.Time) {
		fmt.Fprintf(w, "%.3f", float64(t.UnixNano())/1e9)
		for range benchGPUs {
			fmt.Fprintf(w, ",%d,81559,%d,%d,%.1f", 1000+n%70000, n%100, 40+n%20, 60+float64(n%600)/1.7)
		}
		w.WriteByte('\n')
	}},
	{name: "date-blocks", sample: func(w *bytes.Buffer, n int, t time.Time) {
		w.WriteString(t.Format("Mon Jan _2 15:04:05 MST 2006") + "\n")
		w.WriteString("index, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\n")
		for g := range benchGPUs {
			fmt.Fprintf(w, "%d, %s, %d MiB, 81559 MiB, %d %%\n", g, h100, 1000+n%70000, n%100)
		}
	}},
	{name: "table", sample: func(w *bytes.Buffer, n int, t time.Time) { writeTable(w, n, t) }},
	{name: "dmon", head: "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk     fb   bar1\n" +
		"#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %    MHz    MHz     MB     MB\n",
		sample: func(w *bytes.Buffer, n int, t time.Time) {
			for g := range benchGPUs {
				fmt.Fprintf(w, " %s   %s %6d %6d %6d      - %6d %6d      0      0   2619   1980 %6d      5\n",
					t.Format("20060102"), t.Format("15:04:05"), g, 60+n%600, 40+n%20, n%100, n%50, 1000+n%70000)
			}
		}},
	{name: "gpustat", sample: func(w *bytes.Buffer, n int, t time.Time) {
		w.WriteString("node1                     " + t.Format("Mon Jan _2 15:04:05 2006") + "  535.129.03\n")
		for g := range benchGPUs {
			fmt.Fprintf(w, "[%d] %s | %d°C, %3d %% | %5d / 81559 MB | alice(%dM)\n", g, h100, 40+n%20, n%100, 1000+n%70000, 900+n%70000)
		}
	}},
}

func nvitopHeader() string {
	cols := []string{"metrics-daemon/timestamp"}
	for g := range benchGPUs {
		for _, m := range []string{"memory_used (MiB)", "memory_total (MiB)", "gpu_utilization (%)", "temperature (C)", "power_usage (W)"} {
			cols = append(cols, fmt.Sprintf("metrics-daemon/cuda:%d (gpu:%d)/%s/mean", g, g, m))
		}
	}
	return strings.Join(cols, ",") + "\n"
}

// writeTable writes one sample as nvidia-smi 535 prints its table, a
// process on each GPU.
func writeTable(w *bytes.Buffer, n int, t time.Time) {
	const rule = "+-----------------------------------------+----------------------+----------------------+\n"
	w.WriteString(t.Format("Mon Jan _2 15:04:05 2006") + "       \n")
	w.WriteString("+---------------------------------------------------------------------------------------+\n")
	w.WriteString("| NVIDIA-SMI 535.129.03             Driver Version: 535.129.03   CUDA Version: 12.2     |\n")
	w.WriteString("|-----------------------------------------+----------------------+----------------------+\n")
	w.WriteString("| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |\n")
	w.WriteString("| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |\n")
	w.WriteString("|                                         |                      |               MIG M. |\n")
	w.WriteString("|=========================================+======================+======================|\n")
	for g := range benchGPUs {
		fmt.Fprintf(w, "|%4d  %-31sOn  | 00000000:%02X:00.0 Off |                    0 |\n", g, h100, 0x18+g)
		fmt.Fprintf(w, "| N/A   %2dC    P0 %24s | %20s | %7s      Default |\n", 40+n%20,
			fmt.Sprintf("%dW / 700W", 60+n%600), fmt.Sprintf("%dMiB / 81559MiB", 1000+n%70000), fmt.Sprintf("%d%%", n%100))
		w.WriteString("|                                         |                      |             Disabled |\n")
		w.WriteString(rule)
	}
	w.WriteString("                                                                                         \n")
	w.WriteString("+---------------------------------------------------------------------------------------+\n")
	w.WriteString("| Processes:                                                                            |\n")
	w.WriteString("|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |\n")
	w.WriteString("|        ID   ID                                                             Usage      |\n")
	w.WriteString("|=======================================================================================|\n")
	for g := range benchGPUs {
		fmt.Fprintf(w, "|  %3d   N/A  N/A   %7d      C   python train.py                           %6dMiB |\n", g, 100000+g, 900+n%70000)
	}
	w.WriteString("+---------------------------------------------------------------------------------------+\n")
}

// BenchmarkReplayLayouts reads an 8-GPU log of each layout and reports the
// GPU readings read per second (rows/s: for nvidia-smi's CSV a row is one
// GPU's reading; for the table, dmon and gpustat, one GPU in one sample).
func BenchmarkReplayLayouts(b *testing.B) {
	for _, l := range benchLayouts {
		b.Run(l.name, func(b *testing.B) {
			var buf bytes.Buffer
			buf.WriteString(l.head)
			step := 5 * time.Second
			if l.name == "date-blocks" || l.name == "gpustat" || l.name == "table" {
				step = time.Minute // date lines and titles say seconds
			}
			for n := range benchSamples {
				l.sample(&buf, n, benchStart.Add(time.Duration(n)*step))
			}
			data := buf.Bytes()
			want := benchGPUs * benchSamples
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			total := 0
			cpu := cpuTime(b)
			for b.Loop() {
				got := readDevices(b, ctx, data, l.name, Options{Columns: l.columns})
				if got != want {
					b.Fatalf("got %d GPU readings, want %d", got, want)
				}
				total += got
			}
			reportRates(b, total, cpu)
		})
	}
}
