package prometheus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// series makes a point of a GPU's series: name, then label pairs, read
// by the answer parser.
func series(value float64, name string, labels ...string) point {
	m := map[string]string{"__name__": name}
	for i := 0; i+1 < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var ls labelSet
	d := &decoder{r: bytes.NewReader(raw), limit: int64(len(raw)), strs: newInterner()}
	if err := d.labels(&ls); err != nil {
		panic(err)
	}
	return point{labels: &ls, value: value}
}

func agent(value float64, name string, extra ...string) point {
	return series(value, name, append([]string{"host", "node1", "gpu", "0", "uuid", "GPU-0"}, extra...)...)
}

func dcgm(value float64, name string, extra ...string) point {
	return series(value, name, append([]string{"Hostname", "node1", "gpu", "0", "UUID", "GPU-0", "modelName", "NVIDIA A100-SXM4-80GB"}, extra...)...)
}

// events lists the events of evaluations: "xid 13", "gpu_lost", one
// evaluation per line.
func eventsOf(snaps []*gpu.Snapshot) string {
	var out []string
	for _, s := range snaps {
		for _, e := range s.Events {
			if e.Kind == gpu.EventXID {
				out = append(out, fmt.Sprintf("xid %d", e.XID))
			} else {
				out = append(out, e.Kind.String())
			}
		}
	}
	return strings.Join(out, " ")
}

// TestEvents steps a builder through evaluations and checks the events
// each one carries: XID counters that rise (gpuwatch), the last XID that
// changes (dcgm-exporter), a GPU the agent reports lost.
func TestEvents(t *testing.T) {
	used := agent(1<<30, "gpuwatch_gpu_memory_used_bytes")
	fb := dcgm(1000, "DCGM_FI_DEV_FB_USED")
	for _, tc := range []struct {
		name   string
		schema Schema
		evals  [][]point
		want   []string // per evaluation
		gpus   []int    // GPUs in node1's snapshot, per evaluation
	}{{
		name:   "gpuwatch XID counters",
		schema: SchemaGPUWatch,
		evals: [][]point{
			{used, agent(2, gwXID, "xid", "13")},                               // the baseline
			{used, agent(3, gwXID, "xid", "13")},                               // +1
			{used, agent(3, gwXID, "xid", "13")},                               // no change
			{used, agent(3, gwXID, "xid", "13"), agent(1, gwXID, "xid", "79")}, // a new code on a known GPU
			{used, agent(1, gwXID, "xid", "13"), agent(1, gwXID, "xid", "79")}, // the agent restarted: counters reset
			{used}, // a counter missing from one answer
			{used, agent(1, gwXID, "xid", "13"), agent(1, gwXID, "xid", "79")}, // back unchanged: no news
		},
		want: []string{"", "xid 13", "", "xid 79", "xid 13", "", ""},
		gpus: []int{1, 1, 1, 1, 1, 1, 1},
	}, {
		name:   "dcgm-exporter's last XID",
		schema: SchemaDCGM,
		evals: [][]point{
			{fb, dcgm(79, dcgmXID)}, // the baseline
			{fb, dcgm(79, dcgmXID)},
			{fb, dcgm(48, dcgmXID)},
			{fb, dcgm(0, dcgmXID)},
			{fb, dcgm(48, dcgmXID)},
		},
		want: []string{"", "", "xid 48", "", "xid 48"},
		gpus: []int{1, 1, 1, 1, 1},
	}, {
		name:   "a GPU the agent lost",
		schema: SchemaGPUWatch,
		evals: [][]point{
			{used, agent(0, gwLost)},
			{agent(1, gwLost), agent(1, gwInfo)},
			{agent(1, gwLost), agent(1, gwInfo)},
			{used, agent(0, gwLost)},
		},
		want: []string{"", "gpu_lost", "", ""},
		gpus: []int{1, 0, 0, 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(tc.schema, time.Minute, nil)
			for i, points := range tc.evals {
				snaps := b.build(at0.Add(time.Duration(i)*time.Minute), points)
				if len(snaps) != 1 || snaps[0].Host != "node1" {
					t.Fatalf("evaluation %d: %s", i, describe(snaps))
				}
				if got := eventsOf(snaps); got != tc.want[i] {
					t.Errorf("evaluation %d: events %q, want %q", i, got, tc.want[i])
				}
				if got := len(snaps[0].Devices); got != tc.gpus[i] {
					t.Errorf("evaluation %d: %d GPUs, want %d", i, got, tc.gpus[i])
				}
			}
		})
	}
}

// TestAutoPrefersTheAgent: with schema auto, a GPU that a gpuwatch agent
// and dcgm-exporter both report (under their own host names even) is read
// once, from the agent; dcgm-exporter's other GPUs are read from it.
func TestAutoPrefersTheAgent(t *testing.T) {
	b := newBuilder(SchemaAuto, time.Minute, nil)
	snaps := b.build(at0, []point{
		agent(1<<30, "gpuwatch_gpu_memory_used_bytes"),
		agent(80<<30, "gpuwatch_gpu_memory_total_bytes"),
		series(500, "DCGM_FI_DEV_FB_USED", "Hostname", "node1.example.net", "gpu", "0", "UUID", "GPU-0"),
		series(500, "DCGM_FI_DEV_FB_USED", "Hostname", "node9", "gpu", "0", "UUID", "GPU-9"),
	})
	if got, want := describe(snaps), "host node1 at 2025-11-29T09:00:00Z: 1 GPUs, 0 events\n"+
		"  gpu 0 GPU-0 \"\" mem 1073741824/85899345920 util unknown mem-util unknown temp unknown power unknown/unknown\n"+
		"host node9 at 2025-11-29T09:00:00Z: 1 GPUs, 0 events\n"+
		"  gpu 0 GPU-9 \"\" mem 0/0 util unknown mem-util unknown temp unknown power unknown/unknown\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSeriesWithoutAGPU: series without a host, a GPU index or with one
// that is not a number are left out and counted, never a panic.
func TestSeriesWithoutAGPU(t *testing.T) {
	b := newBuilder(SchemaGPUWatch, time.Minute, nil)
	snaps := b.build(at0, []point{
		series(1, "gpuwatch_gpu_memory_used_bytes", "gpu", "0", "uuid", "GPU-0"),
		series(1, "gpuwatch_gpu_memory_used_bytes", "host", "a", "uuid", "GPU-0"),
		series(1, "gpuwatch_gpu_memory_used_bytes", "host", "a", "gpu", "x"),
		series(1, "gpuwatch_gpu_memory_used_bytes", "host", "a", "gpu", "-1"),
		series(1, "node_load1", "host", "a", "gpu", "0"),
		series(1, "gpuwatch_gpu_memory_used_bytes", "instance", "10.0.0.1:9477", "gpu", "0"),
	})
	if len(snaps) != 1 || snaps[0].Host != "10.0.0.1:9477" || b.skipped != 5 {
		t.Errorf("got %s with %d skipped, want the instance's GPU and 5 skipped", describe(snaps), b.skipped)
	}
}

// TestDCGMTruth: dcgm-exporter's total is used + free + reserved, and the
// reserved part is the device's MemReserved; its host is Hostname
// (dcgm-exporter 3) or hostname (4); a pod, its namespace and container
// name the GPU's holder.
func TestDCGMTruth(t *testing.T) {
	b := newBuilder(SchemaDCGM, time.Minute, nil)
	pod := []string{"namespace", "ml", "pod", "train-0", "container", "trainer"}
	snaps := b.build(at0, []point{
		dcgm(60000, "DCGM_FI_DEV_FB_USED", pod...),
		dcgm(20000, "DCGM_FI_DEV_FB_FREE", pod...),
		dcgm(1000, "DCGM_FI_DEV_FB_RESERVED", pod...),
		series(100, "DCGM_FI_DEV_FB_USED", "hostname", "node2", "gpu", "0", "UUID", "GPU-2"),
	})
	if len(snaps) != 2 || snaps[0].Host != "node1" || snaps[1].Host != "node2" {
		t.Fatalf("got %s, want node1 (Hostname) and node2 (hostname)", describe(snaps))
	}
	d := snaps[0].Devices[0]
	if d.MemTotal != 81000*mib || d.MemReserved != 1000*mib || d.MemUsed != 60000*mib || d.MemAllocatable() != 80000*mib {
		t.Errorf("memory: used %d, total %d, reserved %d; want 60000, 81000 and 1000 MiB", d.MemUsed>>20, d.MemTotal>>20, d.MemReserved>>20)
	}
	if len(d.Processes) != 1 || d.Processes[0].Holder() != "pod ml/train-0, container trainer" || d.Processes[0].Owner() != "ml/train-0" ||
		d.Processes[0].MemUsed != d.MemUsed {
		t.Errorf("holders %+v, want the pod ml/train-0 holding all the memory in use", d.Processes)
	}
}
