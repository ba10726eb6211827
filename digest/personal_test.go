package digest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

var personalPNG = flag.String("personal-png", "", "write the personal digest's picture to this file, to look at")

// personalWeek is a week of two days of samples on node1: alice's small
// job on H100 0 (10% busy, 6 GiB) all day Monday, her notebook holding
// H100 1 idle from 08:00 to 20:00 on Tuesday, bob training hard on H100 2
// both days, and carol on H100 3 for an hour.
func personalWeek(t testing.TB) (gpus []GPUHour, users []UserHour, from, to time.Time) {
	t.Helper()
	r := NewRollups()
	from = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	to = from.Add(7 * 24 * time.Hour)
	dev := func(i int, used uint64, util float64, procs ...gpu.Process) gpu.Device {
		return gpu.Device{Index: i, UUID: "GPU-" + string(rune('a'+i)), Name: "NVIDIA H100 80GB HBM3", MemUsed: used, MemTotal: 80 << 30,
			UtilGPU: util, TempC: 50, PowerW: 200, Processes: procs}
	}
	for s := 0; s < 2*24*3600; s += 60 {
		at := from.Add(time.Duration(s) * time.Second)
		day, hour := s/(24*3600), at.Hour()
		var devs []gpu.Device
		if day == 0 {
			devs = append(devs, dev(0, 6<<30, 10, gpu.Process{PID: 7, User: "alice", Command: "python small.py", Job: "slurm:4242", MemUsed: 6 << 30}))
		} else {
			devs = append(devs, dev(0, 0, 0))
		}
		if day == 1 && hour >= 8 && hour < 20 {
			devs = append(devs, dev(1, 20<<30, 0, gpu.Process{PID: 8, User: "alice", Command: "jupyter-lab", MemUsed: 20 << 30}))
		} else {
			devs = append(devs, dev(1, 0, 0))
		}
		devs = append(devs, dev(2, 70<<30, 95, gpu.Process{PID: 9, User: "bob", Command: "torchrun train.py", MemUsed: 70 << 30}))
		if day == 0 && hour == 12 {
			devs = append(devs, dev(3, 30<<30, 80, gpu.Process{PID: 10, User: "carol", Command: "python eval.py", MemUsed: 30 << 30}))
		} else {
			devs = append(devs, dev(3, 0, 0))
		}
		r.Update(&gpu.Snapshot{Time: at, Host: "node1", Devices: devs})
	}
	gpus, users, _ = r.Window(from, to)
	return gpus, users, from, to
}

func TestBuildPersonal(t *testing.T) {
	gpus, users, from, to := personalWeek(t)
	p := BuildPersonal(gpus, users, "alice", []string{"alice"}, Options{Name: "people:weekly", From: from, To: to})
	if p == nil {
		t.Fatal("BuildPersonal: nil, want alice's week")
	}
	if p.Rank != 2 || p.Ranked != 3 {
		t.Errorf("rank %d of %d, want 2nd of 3 (bob trained more)", p.Rank, p.Ranked)
	}
	if len(p.GPUs) != 2 || p.GPUs[0].GPU != 0 || p.GPUs[1].GPU != 1 {
		t.Fatalf("GPUs %+v, want 0 (24h) then 1 (12h)", p.GPUs)
	}
	if g := p.GPUs[0]; g.HeldHours < 23.9 || float64(g.AvgUtil) < 9.9 || float64(g.AvgUtil) > 10.1 || g.PeakMem != 6<<30 || g.CardMem != 80<<30 || len(g.Jobs) != 1 {
		t.Errorf("GPU 0: %+v, want held 24h at 10%%, peak 6 GiB of 80, job 4242", g)
	}
	if g := p.GPUs[1]; g.IdleHeldHours < 11.9 || g.IdleHeldHours > 12.1 {
		t.Errorf("GPU 1: idle %vh, want 12h", g.IdleHeldHours)
	}
	if p.PeakMem != 20<<30 || p.CardMem != 80<<30 {
		t.Errorf("peak %d of %d, want 20 GiB of 80", p.PeakMem>>30, p.CardMem>>30)
	}
	text := p.Text()
	for _, want := range []string{
		"Your GPUs, Mon 23 Nov 00:00 – Mon 30 Nov 00:00",
		"Rank: 2nd of 3 users by GPU-hours",
		"Peak memory: 20 GiB of the card's 80 GiB (25%)",
		"GPU 0 of node1 (NVIDIA H100 80GB HBM3): 24.0 GPU-hours, 10% busy while held, peak 6 GiB · job 4242",
		"On GPU 0 of node1 (NVIDIA H100 80GB HBM3) your jobs used 10% of the GPU and at most 6 GiB of its 80 GiB: they could run on a smaller GPU or a MIG slice",
		"GPU 1 of node1 (NVIDIA H100 80GB HBM3) sat held but idle for more than 8 hours a day on Tue 24 Nov (up to 12h00m)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the digest lacks %q:\n%s", want, text)
		}
	}
	if q := BuildPersonal(gpus, users, "dave", []string{"dave"}, Options{From: from, To: to}); q != nil {
		t.Errorf("dave used no GPU: got %+v, want nil", q)
	}
	bob := BuildPersonal(gpus, users, "bob", []string{"bob"}, Options{From: from, To: to})
	if bob.Rank != 1 || !strings.Contains(bob.Text(), "Nothing to change") {
		t.Errorf("bob: rank %d, notes %q; want 1st and nothing to change", bob.Rank, bob.Notes)
	}

	checkBlocks(t, p)
	png, err := p.Picture(users).PNG(time.UTC)
	if err != nil {
		t.Fatalf("picture: %v", err)
	}
	if *personalPNG != "" {
		if err := os.WriteFile(*personalPNG, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPersonalBlocksWithinLimits: a person on a hundred GPUs of a fleet,
// with long names, gets a digest Slack takes.
func TestPersonalBlocksWithinLimits(t *testing.T) {
	from := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var gpus []GPUHour
	var users []UserHour
	for i := range 100 {
		host := filepath.Join("node-with-a-rather-long-name", strings.Repeat("x", i%40))
		gpus = append(gpus, GPUHour{Hour: from, Host: host, GPU: i, UUID: "GPU-" + host, Name: strings.Repeat("NVIDIA H100 80GB HBM3 ", 5), MemTotal: 80 << 30, Seconds: 3600})
		users = append(users, UserHour{Hour: from, User: "alice", Host: host, GPU: i, UUID: "GPU-" + host, GPUSeconds: 3600, HeldSeconds: 3600,
			HeldUtilSeconds: 360, MemMax: 1 << 30, IdleHeldSeconds: 9 * 3600, Job: "slurm:" + strings.Repeat("9", 18)})
	}
	p := BuildPersonal(gpus, users, "alice", []string{"alice"}, Options{From: from, To: from.Add(7 * 24 * time.Hour)})
	checkBlocks(t, p)
}

// checkBlocks checks a personal digest's Block Kit against Slack's limits,
// as slack-go reads it.
func checkBlocks(t *testing.T, p *Personal) {
	t.Helper()
	raw, err := p.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	var blocks goslack.Blocks
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("blocks: %v", err)
	}
	if err := blockkit.ValidateMessage(p.Title(), blocks.BlockSet); err != nil {
		t.Errorf("the personal digest breaks Slack's limits: %v", err)
	}
}
