package daemon

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/chart"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
)

// TestAlertChartOfMIGInstance: the chart of a MIG slice's memory alert
// draws the slice's memory against the slice's total, not the card's, and
// names the slice.
func TestAlertChartOfMIGInstance(t *testing.T) {
	d := &Daemon{history: newHistories(historyMinutes * time.Minute)}
	mig := &gpu.MIG{ParentUUID: "GPU-a", GPUInstance: 9, Profile: "1g.10gb"}
	for m := range 40 {
		d.history.Record(&gpu.Snapshot{Time: t0.Add(time.Duration(m) * time.Minute), Host: "node1", Devices: []gpu.Device{
			{Index: 0, UUID: "GPU-a", Name: "NVIDIA A100-SXM4-80GB", MIGEnabled: true, TempC: 60, UtilGPU: math.NaN()},
			{Index: 0, UUID: "MIG-b", Name: "NVIDIA A100-SXM4-80GB", MIG: mig, MemTotal: 9728 << 20,
				MemUsed: uint64(2000+180*m) << 20, UtilGPU: math.NaN(), TempC: math.NaN()},
		}})
	}
	rs, err := rules.ParseFile("r.yaml", []byte("rules:\n  - alert: SliceLeak\n    when: trend(memory.used, 20m) > 10MiB/min\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &rules.Transition{At: t0.Add(39 * time.Minute), Rule: rs[0], Alert: "SliceLeak", State: rules.StateFiring, Host: "node1",
		GPU: 0, UUID: "MIG-b", GPUName: "NVIDIA A100-SXM4-80GB", MIG: mig, StartsAt: t0.Add(39 * time.Minute), Trend: 180 << 20 / 60,
		Processes: []gpu.Process{{PID: 4242, User: "alice", Command: "python train.py"}}}
	a, ok := d.alertChart(tr, chart.KindMemory)
	if !ok {
		t.Fatal("no chart of the slice's alert")
	}
	if a.Ceiling != 9728<<20 {
		t.Errorf("ceiling %v bytes, want the slice's 9.5 GiB", a.Ceiling)
	}
	if last := a.Memory.Values[len(a.Memory.Values)-1]; math.Abs(last-float64(uint64(2000+180*39)<<20)) > 1<<20 {
		t.Errorf("the last memory point is %v bytes, want the slice's", last)
	}
	f := a.Figure(time.UTC)
	if !strings.Contains(f.Title, "GPU 0 · MIG 9 (1g.10gb) on node1") {
		t.Errorf("title %q, want it to name the slice", f.Title)
	}
	png, err := a.PNG(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("GPUWATCH_ARTIFACTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "mig-slice-chart.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
