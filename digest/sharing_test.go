package digest_test

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// playInto plays a simulated scenario into rollups.
func playInto(t *testing.T, scenario string) (*digest.Rollups, *sim.Source) {
	t.Helper()
	src, err := sim.New(sim.Config{Scenario: scenario, Seed: 1, Host: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	r := digest.NewRollups()
	for {
		s, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return r, src
		}
		if err != nil {
			t.Fatal(err)
		}
		r.Update(s)
	}
}

// TestDigestOfMIGSlices: the seven slices of an A100 are lines of their
// own under it, their utilization "not measured" (an A100 measures none
// per slice), and they count for one GPU in the totals.
func TestDigestOfMIGSlices(t *testing.T) {
	r, _ := playInto(t, sim.ScenarioMIGSliceLeak)
	gpus, users, alerts := r.Window(simStart, simStart.Add(3*time.Hour))
	rep := digest.Build(gpus, users, alerts, digest.Options{Host: "node1"})
	if len(rep.GPUs) != 8 || !rep.GPUs[0].MIGEnabled || rep.GPUs[1].MIG == nil || rep.GPUs[7].MIG == nil {
		t.Fatalf("GPUs: got %d, want the A100 and its 7 slices after it", len(rep.GPUs))
	}
	for _, g := range rep.GPUs[1:] {
		if !g.UtilNotLogged || g.MIG.Profile != "1g.10gb" {
			t.Errorf("%s: utilization not logged %v, want not measured", g.UUID, g.UtilNotLogged)
		}
	}
	// Seven slices for two hours are two GPU-hours, not fourteen.
	if math.Abs(rep.CoveredHours-2) > 0.01 {
		t.Errorf("covered %.3f GPU-hours, want 2 (seven slices, a seventh of the GPU each)", rep.CoveredHours)
	}
	text := rep.Text()
	for _, want := range []string{
		"1 GPU (7 MIG instances), 2.0 GPU-hours covered: utilization not measured",
		"GPU 0 NVIDIA A100-SXM4-80GB in MIG mode: its use is its instances'",
		"  ↳ MIG 7 (1g.10gb) utilization not measured; memory peak ",
		"  ↳ MIG 13 (1g.10gb) utilization not measured; memory peak ",
		" on GPU 0 · MIG ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("digest lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "avg 0%") {
		t.Errorf("digest says 0%% for a slice it does not measure:\n%s", text)
	}
	if _, err := rep.Blocks(); err != nil {
		t.Errorf("Blocks: %v", err)
	}
}

// TestDigestOfTimeSlicedGPU: the hours of a GPU three pods share are
// split between their owners by the memory each holds.
func TestDigestOfTimeSlicedGPU(t *testing.T) {
	r, src := playInto(t, sim.ScenarioTimesliceLeak)
	gpus, users, alerts := r.Window(simStart, simStart.Add(3*time.Hour))
	rep := digest.Build(gpus, users, alerts, digest.Options{Host: "node1"})
	if len(rep.Users) != 3 {
		t.Fatalf("users: got %+v, want the three pods' owners", rep.Users)
	}
	var sum float64
	for _, u := range rep.Users {
		sum += u.GPUHours
		if u.GPUHours <= 0.2 || u.GPUHours >= 1.5 {
			t.Errorf("%s: %.2f GPU-hours of the card's 2, want a share by memory", u.User, u.GPUHours)
		}
	}
	if math.Abs(sum-rep.CoveredHours) > 0.05 {
		t.Errorf("users' GPU-hours sum to %.2f, the card's %.2f: want the hours split, not copied", sum, rep.CoveredHours)
	}
	// The leaking pod held more and more memory: the most hours.
	if rep.Users[0].GiBHours <= rep.Users[1].GiBHours {
		t.Errorf("users %+v: want the leaking pod's owner first", rep.Users)
	}
	_ = src
}

// simStart is when a simulation without a start begins.
var simStart = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// TestPersonalDigestOfMIGSlice: a person's digest names the slice they
// used, "GPU 0 · MIG 1 (4g.40gb)", and counts its hours as the slice's
// share of the GPU (four sevenths for a 4g slice), as the team's digest
// does.
func TestPersonalDigestOfMIGSlice(t *testing.T) {
	r, _ := playInto(t, sim.ScenarioMIGMixed)
	from, to := simStart, simStart.Add(3*time.Hour)
	gpus, users, _ := r.Window(from, to)
	var who string
	var seconds float64
	for _, u := range users {
		if u.MIG != nil && u.MIG.GPUInstance == 1 {
			who = u.User
			seconds += u.GPUSeconds
		}
	}
	if who == "" {
		t.Fatal("no user on the 4g.40gb slice")
	}
	p := digest.BuildPersonal(gpus, users, who, []string{who}, digest.Options{From: from, To: to})
	if p == nil {
		t.Fatalf("%s: no personal digest", who)
	}
	g := p.GPUs[slices.IndexFunc(p.GPUs, func(g digest.PersonalGPU) bool { return g.MIG != nil && g.MIG.GPUInstance == 1 })]
	if want := 4.0 / 7 * seconds / 3600; math.Abs(g.GPUHours-want) > 0.01 {
		t.Errorf("%s on the 4g.40gb slice: %.2f GPU-hours, want %.2f (4/7 of the %.2f hours held)", who, g.GPUHours, want, seconds/3600)
	}
	if text := p.Text(); !strings.Contains(text, "GPU 0 · MIG 1 (4g.40gb) of node1 (NVIDIA H100 80GB HBM3): ") {
		t.Errorf("the personal digest does not name the slice:\n%s", text)
	}
	if _, err := p.Picture(users).PNG(time.UTC); err != nil {
		t.Errorf("picture: %v", err)
	}
}
