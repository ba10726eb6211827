package rules

import (
	"bytes"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// migGPU is an A100 80GB split in slices of 10 GiB at minute m: the
// parent with the card's readings, then one instance per entry of used
// (GiB), with utilization util (NaN: not measured).
func migGPU(util float64, used ...float64) []gpu.Device {
	ds := []gpu.Device{{Index: 0, UUID: "GPU-a100", Name: "NVIDIA A100-SXM4-80GB", MIGEnabled: true,
		UtilGPU: math.NaN(), UtilMem: math.NaN(), TempC: 50, PowerW: 200, PowerLimitW: 400}}
	for i, u := range used {
		gi := 7 + i
		ds = append(ds, gpu.Device{Index: 0, UUID: gpu.InstanceUUID("GPU-a100", gi, 0), Name: "NVIDIA A100-SXM4-80GB",
			MIG:     &gpu.MIG{ParentUUID: "GPU-a100", GPUInstance: gi, Profile: "1g.10gb"},
			MemUsed: uint64(u * (1 << 30)), MemTotal: 10 << 30, UtilGPU: util, UtilMem: util,
			TempC: math.NaN(), PowerW: math.NaN(), PowerLimitW: math.NaN(),
			Processes: []gpu.Process{{PID: 1000 + i, User: "user" + string(rune('a'+i)), MemUsed: uint64(u * (1 << 30))}}})
	}
	return ds
}

func TestEngineMIGInstanceIsItsOwnGPU(t *testing.T) {
	e := NewEngine(mustRules(t, `
rules:
  - alert: NearFull
    when: memory.used_percent > 95
    summary: "{{.Label}} memory at {{.Value | percent}}"
  - alert: Hot
    when: temperature > 45
`), Options{})
	ts := e.Eval(&gpu.Snapshot{Time: t0, Host: "node1", Devices: migGPU(50, 2, 9.8, 3)})
	var got []string
	for _, tr := range ts {
		got = append(got, tr.Alert+" "+tr.Label()+" "+tr.Summary)
	}
	want := []string{
		"Hot GPU 0 Hot on GPU 0 (NVIDIA A100-SXM4-80GB): 50 C", // the card's reading, on the parent only
		"NearFull GPU 0 · MIG 8 (1g.10gb) GPU 0 · MIG 8 (1g.10gb) memory at 98%",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transitions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	nf := ts[1]
	if nf.MIG == nil || nf.UUID != "MIG-GPU-a100/8/0" || nf.Labels["mig_profile"] != "1g.10gb" || nf.Labels["parent_uuid"] != "GPU-a100" {
		t.Errorf("instance transition: MIG %+v uuid %s labels %v", nf.MIG, nf.UUID, nf.Labels)
	}
}

func TestEngineSkipsUtilizationRulesWhereUnmeasured(t *testing.T) {
	rs := mustRules(t, `
rules:
  - alert: Idle
    when: memory.used > 1GiB and avg(utilization.gpu, 5m) < 5
    for: 10m
  - alert: NearFull
    when: memory.used_percent > 95
`)
	for _, tc := range []struct {
		name      string
		util      float64
		wantIdle  int
		wantWarns int
	}{
		{"GPM measures the slices", 1, 2, 0},
		{"no per-instance activity", math.NaN(), 0, 1},
	} {
		var logs bytes.Buffer
		e := NewEngine(rs, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		idle := 0
		for m := 0; m <= 30; m++ {
			for _, tr := range e.Eval(&gpu.Snapshot{Time: t0.Add(time.Duration(m) * time.Minute), Host: "node1", Devices: migGPU(tc.util, 2, 3)}) {
				if tr.Alert == "Idle" && !tr.Resolved() {
					idle++
				}
			}
		}
		if idle != tc.wantIdle {
			t.Errorf("%s: Idle fired on %d slices, want %d", tc.name, idle, tc.wantIdle)
		}
		if got := strings.Count(logs.String(), "rule skipped"); got != tc.wantWarns {
			t.Errorf("%s: %d warnings, want %d (one for the rule on the GPU):\n%s", tc.name, got, tc.wantWarns, logs.String())
		}
		if tc.wantWarns > 0 && !strings.Contains(logs.String(), `gpu="GPU 0" instances="GPU 0 · MIG 7 (1g.10gb), GPU 0 · MIG 8 (1g.10gb)"`) {
			t.Errorf("%s: the warning does not name the slice:\n%s", tc.name, logs.String())
		}
	}
}
