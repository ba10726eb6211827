package digest

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestUnderused feeds rollups four hours of samples: GPU 0's job is starved
// (15–25% utilization), GPU 1 trains well, GPU 2 is held idle, GPU 3 is
// starved for only an hour, GPU 4 is starved with no process data (a log).
// Only GPUs 0 and 4 are held at low utilization for hours.
func TestUnderused(t *testing.T) {
	r := NewRollups()
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	proc := func(user, cmd string) []gpu.Process {
		return []gpu.Process{{PID: 7, User: user, Command: cmd, MemUsed: 30 << 30}, {PID: 8, User: user, Command: "worker", MemUsed: 1 << 30}}
	}
	dev := func(i int, util float64, procs []gpu.Process) gpu.Device {
		return gpu.Device{Index: i, UUID: "GPU-" + string(rune('a'+i)), MemUsed: 31 << 30, MemTotal: 80 << 30,
			UtilGPU: util, TempC: 50, PowerW: 200, Processes: procs}
	}
	for s := 0; s < 4*3600; s += 10 {
		starved := 15 + float64(s%11) // 15–25%
		third := 90.0
		if s < 3600 {
			third = starved
		}
		r.Update(&gpu.Snapshot{Time: start.Add(time.Duration(s) * time.Second), Host: "node1", Devices: []gpu.Device{
			dev(0, starved, proc("alice", "python train.py --workers 1")),
			dev(1, 92, proc("bob", "torchrun train.py")),
			dev(2, 0, proc("carol", "jupyter-lab")),
			dev(3, third, proc("dave", "python eval.py")),
			dev(4, starved, nil),
		}})
	}
	gpus, users, alerts := r.Window(start, start.Add(4*time.Hour))
	rep := Build(gpus, users, alerts, Options{From: start, To: start.Add(4 * time.Hour)})
	if len(rep.Underused) != 2 {
		t.Fatalf("got underused %+v, want GPUs 0 and 4", rep.Underused)
	}
	u := rep.Underused[0]
	if u.GPU != 0 || u.User != "alice" || u.Command != "python train.py --workers 1" || u.Hours < 3.9 || u.AvgUtil < 19 || u.AvgUtil > 21 {
		t.Errorf("got %+v, want GPU 0 held about 4h at 20%% by alice's python train.py", u)
	}
	if rep.Underused[1].GPU != 4 || rep.Underused[1].User != "" {
		t.Errorf("got %+v, want GPU 4 without a user", rep.Underused[1])
	}
	text := rep.Text()
	for _, want := range []string{
		"Held at low utilization",
		"GPU 0: alice's python train.py --workers 1 held it 3h59m at 20% average utilization — starved by its input pipeline, or too small for this GPU",
		"GPU 4: its job held it 3h59m at 20% average utilization",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the digest lacks %q:\n%s", want, text)
		}
	}
	if md := rep.Markdown(); !strings.Contains(md, "**GPU 0**: alice's `python train.py --workers 1` held it") {
		t.Errorf("the markdown digest lacks GPU 0's line:\n%s", md)
	}
}

func TestUnderusedNone(t *testing.T) {
	rep := Build([]GPUHour{{Hour: hour(0), GPU: 0, Seconds: 3600, HeldSeconds: 3600, HeldUtilSeconds: 3000}}, nil, nil, Options{})
	if len(rep.Underused) != 0 || !strings.Contains(rep.Text(), "No GPU was held busy under 30% utilization for 2h00m or more.") {
		t.Errorf("got %+v and\n%s\nwant no underused GPU, said so", rep.Underused, rep.Text())
	}
}
