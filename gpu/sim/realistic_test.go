package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// realSeeds are the seeds the realistic workloads are checked with.
var realSeeds = []uint64{1, 2, 3, 7, 42, 1234}

// realRun plays a realistic scenario at its own step and returns its
// snapshots and truth file.
func realRun(t testing.TB, scenario string, seed uint64) ([]*gpu.Snapshot, *sim.TruthFile, *sim.Source) {
	t.Helper()
	snaps, src := run(t, sim.Config{Scenario: scenario, Seed: seed})
	tf := src.TruthFile()
	if tf == nil {
		t.Fatalf("%s has no truth file", scenario)
	}
	return snaps, tf, src
}

// forRealSeeds runs check on every seed of a realistic scenario.
func forRealSeeds(t *testing.T, scenario string, check func(t *testing.T, r realTrace)) {
	for _, seed := range realSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			snaps, tf, src := realRun(t, scenario, seed)
			check(t, realTrace{snaps: snaps, tf: tf, truth: src.Truth(), start: snaps[0].Time.Truncate(time.Second)})
		})
	}
}

// realTrace is one run of a realistic scenario.
type realTrace struct {
	snaps []*gpu.Snapshot
	tf    *sim.TruthFile
	truth []sim.Truth
	start time.Time
}

// sample is one GPU's reading at an offset from the start.
type sample struct {
	at time.Duration
	gpu.Device
}

// gpu returns GPU i's readings, in time order.
func (r realTrace) gpu(i int) []sample {
	var out []sample
	for _, s := range r.snaps {
		for _, d := range s.Devices {
			if d.Index == i {
				out = append(out, sample{s.Time.Sub(r.start), d})
			}
		}
	}
	return out
}

// secs is a truth file time as a duration.
func secs(s sim.Seconds) time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// note returns a note of the truth file as seconds.
func (r realTrace) note(t *testing.T, key string) []time.Duration {
	t.Helper()
	v, ok := r.tf.Notes[key]
	if !ok {
		t.Fatalf("truth file has no note %q: %v", key, r.tf.Notes)
	}
	var out []time.Duration
	switch v := v.(type) {
	case sim.Seconds:
		out = append(out, secs(v))
	case []sim.Seconds:
		for _, s := range v {
			out = append(out, secs(s))
		}
	case [][]sim.Seconds:
		for _, ss := range v {
			for _, s := range ss {
				out = append(out, secs(s))
			}
		}
	case int:
		out = append(out, time.Duration(v))
	default:
		t.Fatalf("note %q is a %T", key, v)
	}
	return out
}

// between returns the samples at offsets in [from, until).
func between(ss []sample, from, until time.Duration) []sample {
	var out []sample
	for _, s := range ss {
		if s.at >= from && s.at < until {
			out = append(out, s)
		}
	}
	return out
}

func mib(s sample) float64 { return float64(s.MemUsed >> 20) }

func minMiB(ss []sample) float64 {
	m := math.Inf(1)
	for _, s := range ss {
		m = math.Min(m, mib(s))
	}
	return m
}

func maxMiB(ss []sample) float64 {
	m := math.Inf(-1)
	for _, s := range ss {
		m = math.Max(m, mib(s))
	}
	return m
}

func meanOf(ss []sample, f func(sample) float64) float64 {
	sum := 0.0
	for _, s := range ss {
		sum += f(s)
	}
	return sum / float64(len(ss))
}

func util(s sample) float64 { return s.UtilGPU }

// floorSlope is the least-squares slope, in MiB/min, of the floors (the
// smallest reading) of the windows of w in [from, until): a leak's rate,
// whatever evaluation passes add on top.
func floorSlope(ss []sample, from, until, w time.Duration) float64 {
	var xs, ys []float64
	for t := from; t+w <= until; t += w {
		if win := between(ss, t, t+w); len(win) > 0 {
			xs, ys = append(xs, (t+w/2).Minutes()), append(ys, minMiB(win))
		}
	}
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// jobStart is when a GPU's memory first rises above its driver's few MiB.
func jobStart(ss []sample) time.Duration {
	for _, s := range ss {
		if mib(s) > 100 {
			return s.at
		}
	}
	return -1
}

// traceShape is what the original trace of a realistic scenario is: its
// GPUs, step and length.
type traceShape struct {
	gpus     int
	name     string
	totalMiB int
	step     time.Duration
	duration time.Duration
}

// originalShape reads the shape of scenario's trace from the copy of its
// truth in testdata/v2 (from shared/traces/v2).
func originalShape(t *testing.T, scenario string) (traceShape, map[string]any) {
	t.Helper()
	b, err := os.ReadFile("testdata/v2/" + scenario + ".truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var tf sim.TruthFile
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return traceShape{
		gpus: len(tf.GPUs), name: tf.GPUs[0].Name, totalMiB: tf.GPUs[0].MemoryTotalMiB,
		step: secs(tf.Step), duration: secs(tf.Duration),
	}, raw
}

func TestRealisticShapes(t *testing.T) {
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			want, _ := originalShape(t, sc)
			for _, seed := range []uint64{1, 2, 3} {
				snaps, tf, _ := realRun(t, sc, seed)
				if len(tf.GPUs) != want.gpus {
					t.Errorf("seed %d: %d GPUs, the trace has %d", seed, len(tf.GPUs), want.gpus)
				}
				for _, g := range tf.GPUs {
					if g.Name != want.name || g.MemoryTotalMiB != want.totalMiB {
						t.Errorf("seed %d: GPU %d is a %s with %d MiB, the trace's are %s with %d MiB", seed, g.GPU, g.Name, g.MemoryTotalMiB, want.name, want.totalMiB)
					}
				}
				if got := secs(tf.Step); got != want.step {
					t.Errorf("seed %d: step %v, the trace's is %v", seed, got, want.step)
				}
				// Both end within a step or so of the same nominal length.
				if got := secs(tf.Duration); got < want.duration-2*want.step || got > want.duration+2*want.step {
					t.Errorf("seed %d: last sample at %v, the trace's at %v", seed, got, want.duration)
				}
				if got := snaps[len(snaps)-1].Time.Sub(snaps[0].Time.Truncate(time.Second)); (got - secs(tf.Duration)).Abs() > 50*time.Millisecond {
					t.Errorf("seed %d: last snapshot at %v, truth file says %v", seed, got, secs(tf.Duration))
				}
				rows := 0
				for _, s := range snaps {
					rows += len(s.Devices)
				}
				if rows != tf.Rows {
					t.Errorf("seed %d: %d rows, truth file says %d", seed, rows, tf.Rows)
				}
			}
		})
	}
}

// TestRealisticClock checks the sample times: every step plus nvidia-smi's
// 3–11 ms, a few ms of jitter, in order, from just after the start.
func TestRealisticClock(t *testing.T) {
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			snaps, tf, _ := realRun(t, sc, 5)
			step := secs(tf.Step)
			start := snaps[0].Time.Truncate(time.Second)
			if off := snaps[0].Time.Sub(start); off <= 0 || off > 10*time.Millisecond {
				t.Errorf("first snapshot %v after the start, want a few ms", off)
			}
			var sum time.Duration
			n := 0
			for i := 1; i < len(snaps); i++ {
				d := snaps[i].Time.Sub(snaps[i-1].Time)
				if d <= 0 {
					t.Fatalf("snapshot %d at %v, not after %v", i, snaps[i].Time, snaps[i-1].Time)
				}
				if d > 2*step {
					continue // a gap
				}
				if d < step-5*time.Millisecond || d > step+20*time.Millisecond {
					t.Fatalf("snapshots %d and %d %v apart, want %v and a few ms", i-1, i, d, step)
				}
				sum += d
				n++
			}
			if drift := sum/time.Duration(n) - step; drift < 3*time.Millisecond || drift > 11*time.Millisecond {
				t.Errorf("the clock drifts %v a sample, want 3-11 ms as nvidia-smi's", drift)
			}
		})
	}
}

// TestRealisticExplicitStep: a Config.Step overrides the scenario's own.
func TestRealisticExplicitStep(t *testing.T) {
	snaps, src := run(t, sim.Config{Scenario: sim.ScenarioNoisy1s, Seed: 1, Step: 30 * time.Second})
	if got := src.TruthFile().Step; got != 30 {
		t.Errorf("truth file step %v, want 30", got)
	}
	if n := len(snaps); n < 355 || n > 360 {
		t.Errorf("3 h at 30 s gave %d snapshots, want ~359", n)
	}
}

// TestRealisticReadingsFollowLoad checks the readings every realistic GPU
// shares with the traces: an idle temperature of 29–37 C, power linear in
// utilization with each model's fit, memory noise of a few MiB, and no GPU
// above 75 C without a cooling problem.
func TestRealisticReadingsFollowLoad(t *testing.T) {
	fits := map[string]struct{ idleW, fullW float64 }{ // fitted to shared/traces/v2
		"NVIDIA H100 80GB HBM3": {72, 616}, "NVIDIA A100-SXM4-40GB": {55, 352},
		"NVIDIA A100-SXM4-80GB": {62, 352}, "NVIDIA GeForce RTX 4090": {24, 396},
	}
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			snaps, tf, src := realRun(t, sc, 2)
			r := realTrace{snaps: snaps, tf: tf, truth: src.Truth(), start: snaps[0].Time.Truncate(time.Second)}
			for _, g := range tf.GPUs {
				ss := r.gpu(g.GPU)
				if c := ss[0].TempC; !math.IsNaN(c) && (c < 28 || c > 38) {
					t.Errorf("GPU %d starts at %v C, want an idle 29-37 C", g.GPU, c)
				}
				hot := false
				for _, in := range tf.Incidents {
					hot = hot || in.GPU == g.GPU && in.Kind == sim.ExpectHot
				}
				for _, s := range ss {
					if !hot && s.TempC > 75 {
						t.Fatalf("GPU %d at %v C at %v, want at most 75 C", g.GPU, s.TempC, s.at)
					}
				}
				idle, busy := 0, 0
				for _, s := range ss {
					if s.UtilGPU < 10 {
						idle++
					} else if s.UtilGPU > 80 {
						busy++
					}
				}
				if math.IsNaN(ss[0].PowerW) || hot || idle < 10 || busy < 10 {
					continue // no power, throttled, or no range of load to fit
				}
				a, b := powerFit(ss)
				fit := fits[g.Name]
				if math.Abs(a-fit.idleW) > 4 || math.Abs(a+100*b-fit.fullW) > 12 {
					t.Errorf("GPU %d (%s): power %.1f W + %.2f W/%% × utilization, want the trace's %v W to %v W", g.GPU, g.Name, a, b, fit.idleW, fit.fullW)
				}
				// Noise: half the median step between neighbouring
				// samples of a job that computes.
				var steps []float64
				for i := 1; i < len(ss); i++ {
					if ss[i].UtilGPU > 50 && ss[i-1].UtilGPU > 50 {
						steps = append(steps, math.Abs(mib(ss[i])-mib(ss[i-1])))
					}
				}
				if len(steps) > 100 && !strings.Contains(g.Role, "sawtooth") && !strings.Contains(g.Role, "leak") {
					slices.Sort(steps)
					if med := steps[len(steps)/2]; med > 15 {
						t.Errorf("GPU %d: memory moves %v MiB from one sample to the next (median), want a few MiB of noise", g.GPU, med)
					}
				}
			}
		})
	}
}

// powerFit is the least-squares line of power over utilization.
func powerFit(ss []sample) (a, b float64) {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.UtilGPU, s.PowerW
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return (sy - b*sx) / n, b
}

// v2Row is a row of the second trace set: like rowRE, with [N/A] for
// temperature and power.
var v2Row = regexp.MustCompile(`^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}), (\d+), ([^,]+), (GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}), (\d+|\[N/A\]), (\d+) %, (\d+) %, (\d+) MiB, (\d+) MiB, (\d+\.\d\d W|\[N/A\])$`)

// TestRealisticCSVRoundTrip writes every realistic scenario as nvidia-smi
// would and reads it back with the replay source: the header and rows of
// the real traces, the same snapshots, a lost GPU's rows missing and no
// rows in a logger's gaps.
func TestRealisticCSVRoundTrip(t *testing.T) {
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			f, err := os.Open("testdata/v2/" + sc + ".head.csv") // the first rows of shared/traces/v2/NAME.csv
			if err != nil {
				t.Fatal(err)
			}
			trace := readLines(t, f)
			f.Close()
			snaps, _ := run(t, sim.Config{Scenario: sc, Seed: 1})
			src, err := sim.New(sim.Config{Scenario: sc, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := sim.WriteCSV(&out, src); err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, bytes.NewReader(out.Bytes()))
			if lines[0] != trace[0] {
				t.Errorf("header\n%q\nwant the trace's\n%q", lines[0], trace[0])
			}
			for i, row := range lines[1:] {
				m := v2Row.FindStringSubmatch(row)
				if m == nil {
					t.Fatalf("row %d %q does not look like a trace row", i+1, row)
				}
				if i < len(trace)-1 {
					want := v2Row.FindStringSubmatch(trace[1+i])
					if m[2] != want[2] || m[3] != want[3] || m[9] != want[9] || (m[10] == "[N/A]") != (want[10] == "[N/A]") {
						t.Errorf("row %d is GPU %s, a %s with %s MiB, power %s; the trace's is GPU %s, a %s with %s MiB, power %s",
							i+1, m[2], m[3], m[9], m[10], want[2], want[3], want[9], want[10])
					}
				}
			}

			rd, err := replay.NewReader(bytes.NewReader(out.Bytes()), sc+".csv", replay.Options{Host: sim.DefaultHost})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				got, err := rd.Next(context.Background())
				if errors.Is(err, io.EOF) {
					if i != len(snaps) {
						t.Errorf("replay read %d snapshots, the source made %d", i, len(snaps))
					}
					break
				}
				if err != nil {
					t.Fatalf("replay snapshot %d: %v", i, err)
				}
				if i >= len(snaps) {
					t.Fatalf("replay read more than the %d snapshots the source made", len(snaps))
				}
				want := snaps[i]
				// The rows' times are to the millisecond, a few apart.
				if d := got.Time.Sub(want.Time); d <= -time.Millisecond || d > 3*time.Millisecond {
					t.Fatalf("snapshot %d at %v, the source's at %v", i, got.Time, want.Time)
				}
				if len(got.Devices) != len(want.Devices) {
					t.Fatalf("snapshot %d has %d GPUs, the source's %d", i, len(got.Devices), len(want.Devices))
				}
				for k := range want.Devices {
					g, w := got.Devices[k], want.Devices[k]
					same := g.Index == w.Index && g.UUID == w.UUID && g.Name == w.Name && g.MemUsed == w.MemUsed && g.MemTotal == w.MemTotal &&
						g.UtilGPU == w.UtilGPU && g.UtilMem == w.UtilMem && sameReading(g.TempC, w.TempC) && sameReading(g.PowerW, w.PowerW)
					if !same {
						t.Fatalf("snapshot %d GPU %d: replay read %+v, the source made %+v", i, k, g, w)
					}
				}
			}
		})
	}
}

func sameReading(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
