package sim_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// The behaviours of the realistic workloads, as the traces of
// shared/traces/v2 and their truths show them, checked for many seeds.

const gib = 1024.0 // MiB

func TestCreepPlateau(t *testing.T) {
	forRealSeeds(t, sim.ScenarioCreepPlateau, func(t *testing.T, r realTrace) {
		c := r.tf.Notes["creep_gpu"].(int)
		ss := r.gpu(c)
		steps := r.note(t, "steps_at_s")
		if n := len(steps); n < 5 || n > 6 {
			t.Fatalf("%d allocator steps, want 5 or 6", n)
		}
		start := jobStart(ss)
		for k, at := range steps {
			// The step: the floor of memory (below any evaluation pass)
			// rises by 1.5–2.5 GiB and stays up.
			prev, next := at-35*time.Second, at+2*time.Minute // the first comes 45 s or more after the warm-up
			if k > 0 {
				prev = max(at-2*time.Minute, steps[k-1]+5*time.Second)
			}
			if k+1 < len(steps) {
				next = min(next, steps[k+1]-5*time.Second)
			}
			jump := minMiB(between(ss, at+5*time.Second, next)) - minMiB(between(ss, prev, at-5*time.Second))
			if jump < 1.4*gib || jump > 2.6*gib {
				t.Errorf("step %d at %v: memory rises %.0f MiB, want 1.5-2.5 GiB", k, at, jump)
			}
			// At about 3, 6, 12, 24, 48, 96 minutes after the job
			// starts: each twice as long after it as the one before.
			if want := 3 * time.Minute << k; (at - start - want).Abs() > want/8 {
				t.Errorf("step %d at %v, %v after the job started; want ~%v", k, at, at-start, want)
			}
		}
		// Then flat, below 85 %: the floor of every 10 minutes the same.
		total := float64(r.tf.GPUs[c].MemoryTotalMiB)
		var floors []float64
		for from := steps[len(steps)-1] + 5*time.Minute; from+10*time.Minute < secs(r.tf.Duration); from += 10 * time.Minute {
			floors = append(floors, minMiB(between(ss, from, from+10*time.Minute)))
		}
		lo, hi := slicesMinMax(floors)
		if hi-lo > 60 {
			t.Errorf("after the last step the floor moves from %.0f to %.0f MiB, want flat", lo, hi)
		}
		if p := 100 * maxMiB(between(ss, steps[len(steps)-1]+time.Minute, secs(r.tf.Duration))) / total; p >= 90 {
			t.Errorf("peaks at %.1f %% after the last step, want below 90 %%", p)
		}
		if p := 100 * hi / total; p >= 85 {
			t.Errorf("plateau at %.1f %%, want below 85 %%", p)
		}
	})
}

func slicesMinMax(xs []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

func TestGPULost(t *testing.T) {
	forRealSeeds(t, sim.ScenarioGPULost, func(t *testing.T, r realTrace) {
		in := r.tf.Incidents[0]
		lostAt := secs(in.From)
		if lostAt < 60*time.Minute || lostAt > 100*time.Minute {
			t.Errorf("GPU lost at %v, want 60-100 min", lostAt)
		}
		var events []gpu.Event
		for _, s := range r.snaps {
			at := s.Time.Sub(r.start)
			has := false
			for _, d := range s.Devices {
				has = has || d.Index == in.GPU
			}
			if has != (at < lostAt) {
				t.Fatalf("at %v GPU %d reports %v; want it to report until %v only", at, in.GPU, has, lostAt)
			}
			if len(s.Devices) < 3 {
				t.Fatalf("at %v only %d GPUs report, want the other three", at, len(s.Devices))
			}
			for _, e := range s.Events {
				if e.Kind == gpu.EventGPULost {
					events = append(events, e)
					if at < lostAt || at > lostAt+secs(r.tf.Step) {
						t.Errorf("loss reported at %v, want in the first snapshot after %v", at, lostAt)
					}
				}
			}
		}
		if len(events) != 1 {
			t.Fatalf("%d GPU-lost events, want 1", len(events))
		}
		if e := events[0]; e.GPU != in.GPU || e.UUID != r.tf.GPUs[in.GPU].UUID || e.Detail == "" {
			t.Errorf("event %+v, want GPU %d (%s) with a detail", e, in.GPU, r.tf.GPUs[in.GPU].UUID)
		}
	})
}

func TestIdleResume(t *testing.T) {
	forRealSeeds(t, sim.ScenarioIdleResume, func(t *testing.T, r realTrace) {
		in := r.tf.Incidents[0]
		ss := r.gpu(in.GPU)
		idle1, compute, closed := r.note(t, "first_idle_s"), r.note(t, "compute_s"), r.note(t, "closed_at_s")[0]
		for _, w := range []struct {
			what   string
			got    time.Duration
			lo, hi time.Duration
		}{
			{"first idle", idle1[1] - idle1[0], 15 * time.Minute, 25 * time.Minute},
			{"computation", compute[1] - compute[0], 8 * time.Minute, 15 * time.Minute},
			{"long idle", closed - compute[1], 80 * time.Minute, 100 * time.Minute},
		} {
			if w.got < w.lo || w.got > w.hi {
				t.Errorf("%s lasts %v, want %v-%v", w.what, w.got, w.lo, w.hi)
			}
		}
		if secs(in.From) != compute[1] || secs(in.Until) != closed+time.Minute {
			t.Errorf("incident %+v, want from the end of the computation %v to a minute after the close %v", in, compute[1], closed)
		}
		checkHeldIdle(t, between(ss, idle1[0]+5*time.Second, idle1[1]), 20*gib, 20*gib+5)
		checkHeldIdle(t, between(ss, compute[1]+10*time.Second, closed), 20*gib+250, 20*gib+850)
		if u := meanOf(between(ss, compute[0]+time.Minute, compute[1]), util); u < 60 {
			t.Errorf("the notebook computes at %.0f %%, want > 60 %%", u)
		}
		if m := maxMiB(between(ss, closed+10*time.Second, secs(r.tf.Duration))); m > 4 {
			t.Errorf("%v MiB after the notebook closed, want the GPU empty", m)
		}
	})
}

// checkHeldIdle checks memory held idle: one exact reading of lo–hi MiB,
// utilization at most 2 %.
func checkHeldIdle(t *testing.T, ss []sample, lo, hi float64) {
	t.Helper()
	if len(ss) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range ss {
		if mib(s) != mib(ss[0]) || mib(s) < lo || mib(s) > hi || s.UtilGPU > 2 {
			t.Fatalf("held idle at %v: %v MiB (first %v), %v %%; want the same %v-%v MiB throughout, at most 2 %%", s.at, mib(s), mib(ss[0]), s.UtilGPU, lo, hi)
		}
	}
}

func TestLeakGappy(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakGappy, func(t *testing.T, r realTrace) {
		if n := len(r.tf.Gaps); n < 2 || n > 3 {
			t.Errorf("%d logger gaps, want 2-3", n)
		}
		for _, g := range r.tf.Gaps {
			from, until := secs(g[0]), secs(g[1])
			if d := until - from; d < 3*time.Minute || d > 10*time.Minute {
				t.Errorf("gap %v-%v lasts %v, want 3-10 min", from, until, d)
			}
			before, after := 0, 0
			for _, s := range r.snaps {
				at := s.Time.Sub(r.start)
				if at >= from && at < until {
					t.Fatalf("snapshot at %v, in the logger's gap %v-%v", at, from, until)
				}
				if at >= from-2*time.Second && at < from {
					before++
				}
				if at >= until && at < until+2*time.Second {
					after++
				}
			}
			if before == 0 || after == 0 {
				t.Errorf("gap %v-%v: %d snapshots just before, %d just after; want samples up to it and from its end", from, until, before, after)
			}
		}
		unknownTemp, rows := 0, 0
		for _, s := range r.snaps {
			for _, d := range s.Devices {
				rows++
				if !math.IsNaN(d.PowerW) {
					t.Fatalf("power %v W; want [N/A] on every row", d.PowerW)
				}
				if math.IsNaN(d.TempC) {
					unknownTemp++
				}
			}
		}
		if share := float64(unknownTemp) / float64(rows); share < 0.001 || share > 0.02 {
			t.Errorf("temperature [N/A] on %.2f %% of rows, want now and then (0.1-2 %%)", 100*share)
		}
		checkLeak(t, r, r.tf.Incidents[0], 150, 300)
	})
}

// checkLeak checks a leak to OOM: its rate as the truth says and within
// lo–hi MiB/min, steady growth, nearly full memory before the OOM and
// nothing after.
func checkLeak(t *testing.T, r realTrace, in sim.Incident, lo, hi float64) {
	t.Helper()
	var rate float64
	for _, tr := range r.truth {
		if tr.GPU == in.GPU && tr.Expect == sim.ExpectLeak && tr.OOMAt == secs(*in.OOMAt) {
			rate = tr.RateMiBPerMin
		}
	}
	if rate < lo || rate > hi {
		t.Errorf("leak of %.1f MiB/min, want %v-%v", rate, lo, hi)
	}
	ss := r.gpu(in.GPU)
	from, oom := secs(in.From), secs(*in.OOMAt)
	for _, tr := range r.truth {
		if tr.OOMAt == oom {
			from = tr.From
		}
	}
	window := max(5*time.Minute, (oom-from)/30)
	for _, tr := range r.truth {
		if tr.OOMAt == oom {
			// The leak proper starts a few minutes after a restarted job.
			from = max(from, tr.From)
		}
	}
	if got := floorSlope(ss, from+window, oom-window, window); math.Abs(got-rate) > 0.05*rate {
		t.Errorf("memory grows %.1f MiB/min, truth says %.1f", got, rate)
	}
	total := float64(r.tf.GPUs[in.GPU].MemoryTotalMiB)
	if p := 100 * maxMiB(between(ss, oom-5*time.Minute, oom)) / total; p < 98 {
		t.Errorf("at most %.1f %% just before the OOM at %v, want nearly full", p, oom)
	}
	for _, s := range between(ss, oom+10*time.Second, oom+90*time.Second) { // a restarted job comes 2 minutes later at the earliest
		if mib(s) > 4 || s.UtilGPU != 0 {
			t.Fatalf("after the OOM at %v: %v MiB, %v %% at %v; want the GPU empty", oom, mib(s), s.UtilGPU, s.at)
		}
	}
}

func TestLeakRestart(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakRestart, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 2 || len(r.tf.Resolves) != 1 {
			t.Fatalf("%d incidents, %d resolves; want 2 leaks and the first one's resolve", len(r.tf.Incidents), len(r.tf.Resolves))
		}
		l1, l2, rc := r.tf.Incidents[0], r.tf.Incidents[1], r.tf.Resolves[0]
		oom1, restart := secs(*l1.OOMAt), secs(l2.From)
		if d := restart - oom1; d < 2*time.Minute || d > 5*time.Minute {
			t.Errorf("restarted %v after the OOM, want 2-5 min", d)
		}
		if rc.After != *l1.OOMAt-60 || secs(rc.By) <= restart || rc.By >= l2.Deadline {
			t.Errorf("resolve check %+v, want from a minute before the first OOM to the restarted job's leak", rc)
		}
		ss := r.gpu(l1.GPU)
		if m := maxMiB(between(ss, oom1+10*time.Second, restart)); m > 4 {
			t.Errorf("%v MiB between the OOM and the restart, want none", m)
		}
		if oom2 := secs(*l2.OOMAt); oom2 > secs(r.tf.Duration)-10*time.Minute {
			t.Errorf("second OOM at %v, want well before the end", oom2)
		}
		checkLeak(t, r, l1, 290, 465)
		checkLeak(t, r, l2, 280, 470)
		var rates []float64
		for _, tr := range r.truth {
			if tr.Expect == sim.ExpectLeak {
				rates = append(rates, tr.RateMiBPerMin)
			}
		}
		if math.Abs(rates[0]-rates[1]) > 0.04*rates[0] {
			t.Errorf("the runs leak %.0f and %.0f MiB/min, want the same code leaking alike", rates[0], rates[1])
		}
	})
}

func TestLeakSlow(t *testing.T) {
	forRealSeeds(t, sim.ScenarioLeakSlow, func(t *testing.T, r realTrace) {
		in := r.tf.Incidents[0]
		if oom := secs(*in.OOMAt); oom < 16*time.Hour || oom > 22*time.Hour+10*time.Minute {
			t.Errorf("OOM at %v, want after ~20 h", oom)
		}
		if from := secs(in.From); from < 90*time.Minute || from > 3*time.Hour {
			t.Errorf("leak from %v, want 1.5-3 h", from)
		}
		checkLeak(t, r, in, 25, 50)
		checkSlowWarmup(t, r.gpu(in.GPU))
		// The other GPU: job A ends 9–11 h in, job B starts 40–70 minutes later.
		other := r.gpu(1 - in.GPU)
		end := r.note(t, "job_a_end_s")[0]
		if end < 9*time.Hour || end > 11*time.Hour {
			t.Errorf("job A ends at %v, want 9-11 h", end)
		}
		b := jobStart(between(other, end+time.Minute, secs(r.tf.Duration)))
		if d := b - end; d < 40*time.Minute || d > 71*time.Minute {
			t.Errorf("job B starts %v after job A ended, want 40-70 min", d)
		}
	})
}

// checkSlowWarmup checks an allocator that warms up slowly: after a quick
// ramp, steps that come ever more rarely, the last 10–20 minutes after the
// job started.
func checkSlowWarmup(t *testing.T, ss []sample) {
	t.Helper()
	start := jobStart(ss)
	// A step: the floor of the next 2 minutes 300 MiB above the reading
	// before, after the quick ramp.
	var steps []time.Duration
	for i := 1; i < len(ss); i++ {
		at := ss[i].at
		if at < start+100*time.Second || at > start+25*time.Minute {
			continue
		}
		if minMiB(between(ss, at, at+2*time.Minute))-mib(ss[i-1]) > 300 {
			steps = append(steps, at)
		}
	}
	if len(steps) < 4 {
		t.Fatalf("%d allocator steps after the ramp (%v), want a slow warm-up", len(steps), steps)
	}
	if last := steps[len(steps)-1] - start; last < 9*time.Minute || last > 21*time.Minute {
		t.Errorf("last warm-up step %v after the start, want 10-20 min", last)
	}
	half := len(steps) / 2
	early := (steps[half] - steps[0]) / time.Duration(half)
	late := (steps[len(steps)-1] - steps[half]) / time.Duration(len(steps)-1-half)
	if late <= early {
		t.Errorf("warm-up steps at %v: %v apart at first, %v later; want ever rarer", steps, early, late)
	}
}

var (
	slowRole  = regexp.MustCompile(`^training \(slow warm-up (\d+) min`)
	spikyRole = regexp.MustCompile(`^training with eval spikes`)
)

func TestNode8(t *testing.T) {
	forRealSeeds(t, sim.ScenarioNode8, func(t *testing.T, r realTrace) {
		kinds := map[string]int{}
		for _, in := range r.tf.Incidents {
			kinds[in.Kind]++
			switch in.Kind {
			case sim.ExpectIdle:
				ss := r.gpu(in.GPU)
				checkHeldIdle(t, between(ss, secs(in.From)+10*time.Second, secs(r.tf.Duration)), 0.4*81559, 0.61*81559)
				if f := secs(in.From); f < 150*time.Minute || f > 200*time.Minute {
					t.Errorf("idle from %v, want 150-200 min", f)
				}
			case sim.ExpectLeak:
				checkLeak(t, r, in, 150, 300)
			}
		}
		if kinds[sim.ExpectIdle] != 1 || kinds[sim.ExpectLeak] != 1 || len(r.tf.Incidents) != 2 {
			t.Errorf("incidents %+v, want one leak and one idle holder", r.tf.Incidents)
		}
		slow, spiky := 0, 0
		for _, g := range r.tf.GPUs {
			ss := r.gpu(g.GPU)
			switch {
			case slowRole.MatchString(g.Role):
				slow++
				if m, _ := strconv.Atoi(slowRole.FindStringSubmatch(g.Role)[1]); m < 10 || m > 20 {
					t.Errorf("GPU %d warms up for %d min, want 10-20", g.GPU, m)
				}
				checkSlowWarmup(t, ss)
			case spikyRole.MatchString(g.Role):
				spiky++
				checkSpikes(t, ss, float64(g.MemoryTotalMiB))
			}
		}
		if slow != 2 || spiky != 1 {
			t.Errorf("%d slow warm-ups and %d spiky GPUs, want 2 and 1", slow, spiky)
		}
	})
}

// checkSpikes checks evaluation passes to 96–97 % of memory for 20–40 s
// every ~10 minutes.
func checkSpikes(t *testing.T, ss []sample, total float64) {
	t.Helper()
	var starts []time.Duration
	var above time.Duration
	for i, s := range ss {
		p := 100 * mib(s) / total
		if p > 97.5 {
			t.Fatalf("pass at %.1f %% at %v, want at most 97 %%", p, s.at)
		}
		if p > 95.5 {
			if i == 0 || 100*mib(ss[i-1])/total <= 95.5 {
				starts = append(starts, s.at)
				above = 0
			}
			above += 5 * time.Second
			if above > 45*time.Second {
				t.Fatalf("above 95.5 %% for %v at %v, want passes of 20-40 s", above, s.at)
			}
		}
	}
	if n := len(starts); n < 28 || n > 40 {
		t.Errorf("%d passes to 96-97 %% in 6 h, want one every ~10 min", n)
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i] - starts[i-1]; d < 8*time.Minute || d > 12*time.Minute {
			t.Errorf("passes at %v and %v, want ~10 min apart", starts[i-1], starts[i])
		}
	}
}

var periodRole = regexp.MustCompile(`period ~(\d+) s`)

func TestNoisy1s(t *testing.T) {
	forRealSeeds(t, sim.ScenarioNoisy1s, func(t *testing.T, r realTrace) {
		if secs(r.tf.Step) != time.Second {
			t.Errorf("step %v, want 1 s", r.tf.Step)
		}
		for _, g := range r.tf.GPUs {
			m := periodRole.FindStringSubmatch(g.Role)
			if m == nil {
				t.Fatalf("GPU %d role %q names no period", g.GPU, g.Role)
			}
			period, _ := strconv.Atoi(m[1])
			if period < 15 || period > 100 {
				t.Errorf("GPU %d churns every %d s, want 15-100 s", g.GPU, period)
			}
			ss := r.gpu(g.GPU)
			warm := jobStart(ss) + 6*time.Minute
			steady := between(ss, warm, secs(r.tf.Duration))
			drops := 0
			for i := 1; i < len(steady); i++ {
				switch d := mib(steady[i-1]) - mib(steady[i]); {
				case d > 1.7*gib && d < 2.2*gib:
					drops++
				case d > 300:
					t.Fatalf("GPU %d: memory falls %.0f MiB at %v, want only the sawtooth's ~2 GiB drops", g.GPU, d, steady[i].at)
				}
			}
			want := (secs(r.tf.Duration) - warm).Seconds() / float64(period)
			if math.Abs(float64(drops)-want) > 0.1*want {
				t.Errorf("GPU %d: %d sawtooth drops, want ~%.0f (one every %d s)", g.GPU, drops, want, period)
			}
			if span := maxMiB(steady) - minMiB(steady); span < 1.9*gib || span > 2.3*gib {
				t.Errorf("GPU %d: memory spans %.0f MiB, want the sawtooth's ±1 GiB", g.GPU, span)
			}
		}
	})
}

// checkPool checks a TensorFlow pool on ss in [from, until): the first
// sample part-mapped, every other exactly the same, 99.2–99.6 % of total.
func checkPool(t *testing.T, ss []sample, from, until time.Duration, total float64) {
	t.Helper()
	job := between(ss, from, until)
	if len(job) < 10 {
		t.Fatalf("%d samples of the job %v-%v", len(job), from, until)
	}
	pool := mib(job[1])
	if p := 100 * pool / total; p < 99.2 || p > 99.6 {
		t.Errorf("pool of %v MiB (%.2f %%), want ~99 %%", pool, p)
	}
	if first := mib(job[0]); first <= 100 || first >= pool {
		t.Errorf("first sample of the job %v MiB, want part of the %v MiB pool", first, pool)
	}
	for _, s := range job[1:] {
		if mib(s) != pool {
			t.Fatalf("pool reads %v MiB at %v, want exactly %v throughout", mib(s), s.at, pool)
		}
	}
}

func TestTFPrealloc(t *testing.T) {
	forRealSeeds(t, sim.ScenarioTFPrealloc, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 0 {
			t.Errorf("incidents %+v, want none", r.tf.Incidents)
		}
		tf := r.tf.Notes["tf_gpu"].(int)
		jobs := r.note(t, "jobs_s")
		ss := r.gpu(tf)
		total := float64(r.tf.GPUs[tf].MemoryTotalMiB)
		checkPool(t, ss, jobs[0], jobs[1], total)
		checkPool(t, ss, jobs[2], jobs[3], total)
		if m := maxMiB(between(ss, jobs[1]+10*time.Second, jobs[2])); m > 4 {
			t.Errorf("%v MiB between the jobs, want none", m)
		}
		if u := meanOf(between(ss, jobs[0]+2*time.Minute, jobs[1]), util); u < 80 {
			t.Errorf("the TensorFlow job computes at %.0f %%, want > 80 %%", u)
		}
	})
}

func TestTFGrabAll(t *testing.T) {
	forRealSeeds(t, sim.ScenarioTFGrabAll, func(t *testing.T, r realTrace) {
		busy := r.tf.Notes["busy_gpu"].(int)
		job := r.note(t, "job_s")
		if len(r.tf.Incidents) != 3 || len(r.tf.Resolves) != 3 {
			t.Errorf("%d incidents and %d resolves, want one of each per idle GPU", len(r.tf.Incidents), len(r.tf.Resolves))
		}
		pids := map[int]bool{}
		for _, g := range r.tf.GPUs {
			ss := r.gpu(g.GPU)
			checkPool(t, ss, job[0], job[1], float64(g.MemoryTotalMiB))
			during := between(ss, job[0]+2*time.Minute, job[1])
			if g.GPU == busy {
				if u := meanOf(during, util); u < 80 {
					t.Errorf("busy GPU %d computes at %.0f %%, want > 80 %%", g.GPU, u)
				}
			} else {
				for _, s := range during {
					if s.UtilGPU > 2 {
						t.Fatalf("idle GPU %d at %v %% at %v, want at most 2 %%", g.GPU, s.UtilGPU, s.at)
					}
				}
			}
			for _, p := range during[0].Processes {
				pids[p.PID] = true
			}
			if m := maxMiB(between(ss, job[1]+10*time.Second, secs(r.tf.Duration))); m > 4 {
				t.Errorf("GPU %d holds %v MiB after the job, want none", g.GPU, m)
			}
		}
		if len(pids) != 1 {
			t.Errorf("processes %v on the four GPUs, want the one TensorFlow process", pids)
		}
	})
}

func TestThermalCycle(t *testing.T) {
	forRealSeeds(t, sim.ScenarioThermalCycle, func(t *testing.T, r realTrace) {
		in := r.tf.Incidents[0]
		ss := r.gpu(in.GPU)
		heat, period := r.note(t, "heat_from_s")[0], r.note(t, "period_s")[0]
		from, end := secs(in.From), secs(in.Until)-10*time.Minute
		if period < time.Minute || period > 3*time.Minute {
			t.Errorf("cycles of %v, want 1-3 min", period)
		}
		if d := end - from; d < 50*time.Minute || d > 70*time.Minute {
			t.Errorf("throttles for %v, want about an hour", d)
		}
		if m := maxTemp(devs(between(ss, 0, heat))); m > 75 {
			t.Errorf("%v C before it heats, want at most 75 C", m)
		}
		cycling := between(ss, from, end)
		lo, hi := 100.0, 0.0
		crossings := 0
		var hotW, coolW []float64
		for i, s := range cycling {
			lo, hi = math.Min(lo, s.TempC), math.Max(hi, s.TempC)
			if i > 0 && cycling[i-1].TempC < 85.5 && s.TempC >= 85.5 {
				crossings++
			}
			if s.UtilGPU > 80 {
				if s.TempC >= 88 {
					hotW = append(hotW, s.PowerW)
				} else if s.TempC <= 83 {
					coolW = append(coolW, s.PowerW)
				}
			}
		}
		if lo < 80 || lo > 83 || hi < 88 || hi > 91 {
			t.Errorf("cycles %v-%v C, want 82-89 C", lo, hi)
		}
		// Noise adds crossings near the middle; never fewer than the cycles.
		if cycles := float64(end-from) / float64(period); float64(crossings) < 0.9*cycles || float64(crossings) > 2*cycles {
			t.Errorf("%d rises through 85.5 C in %.0f cycles of %v", crossings, cycles, period)
		}
		if mean(hotW) > 0.9*mean(coolW) {
			t.Errorf("draws %.0f W at 88 C and above, %.0f W at 83 C and below; want the hot GPU throttled", mean(hotW), mean(coolW))
		}
		if m := maxTemp(devs(between(ss, end+10*time.Minute, secs(r.tf.Duration)))); m >= 80 {
			t.Errorf("%v C 10 minutes after the throttling ended, want it cooled below 80 C", m)
		}
		if m := maxTemp(devs(r.gpu(1 - in.GPU))); m > 75 {
			t.Errorf("the other GPU peaks at %v C, want at most 75 C", m)
		}
	})
}

func devs(ss []sample) []gpu.Device {
	out := make([]gpu.Device, len(ss))
	for i, s := range ss {
		out[i] = s.Device
	}
	return out
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// runs returns the stretches of ss in which ok holds: their start and
// length (to the next sample).
func runs(ss []sample, ok func(sample) bool) [][2]time.Duration {
	var out [][2]time.Duration
	for i := 0; i < len(ss); i++ {
		if !ok(ss[i]) {
			continue
		}
		j := i
		for j < len(ss) && ok(ss[j]) {
			j++
		}
		end := ss[len(ss)-1].at
		if j < len(ss) {
			end = ss[j].at
		}
		out = append(out, [2]time.Duration{ss[i].at, end - ss[i].at})
		i = j
	}
	return out
}

// TestRealisticJobsLookReal: training jobs show the traces' evaluation
// passes (every 15–32 minutes, 20–60 s each) and checkpoints (utilization
// near 0 for 40–120 s, every 28–58 minutes).
func TestRealisticJobsLookReal(t *testing.T) {
	for _, sc := range []string{sim.ScenarioGPULost, sim.ScenarioThermalCycle, sim.ScenarioTFPrealloc} {
		forRealSeeds(t, sc, func(t *testing.T, r realTrace) {
			for _, g := range r.tf.GPUs {
				if !strings.HasPrefix(g.Role, "training (fast") {
					continue
				}
				ss := between(r.gpu(g.GPU), jobStart(r.gpu(g.GPU))+6*time.Minute, 2*time.Hour)
				if ss[len(ss)-1].at-ss[0].at < 80*time.Minute {
					continue // the GPU was lost
				}
				base := minMiB(ss)
				passes := runs(ss, func(s sample) bool { return mib(s) > base+150 })
				if n := len(passes); n > 0 && passes[n-1][0]+passes[n-1][1] >= ss[len(ss)-1].at {
					passes = passes[:n-1] // cut short by the end of the window
				}
				for i, p := range passes {
					if p[1] < 15*time.Second || p[1] > 70*time.Second {
						t.Errorf("GPU %d: pass at %v lasts %v, want 20-60 s", g.GPU, p[0], p[1])
					}
					if i > 0 {
						if d := p[0] - passes[i-1][0]; d < 13*time.Minute || d > 35*time.Minute {
							t.Errorf("GPU %d: passes at %v and %v, want 15-32 min apart", g.GPU, passes[i-1][0], p[0])
						}
					}
				}
				if len(passes) < 2 {
					t.Errorf("GPU %d: %d evaluation passes %v, want one every 15-32 min", g.GPU, len(passes), passes)
				}
				pauses := runs(ss, func(s sample) bool { return s.UtilGPU < 5 })
				long := 0
				for _, p := range pauses {
					if p[1] > 125*time.Second {
						t.Errorf("GPU %d: computes nothing for %v at %v, want checkpoints of 40-120 s", g.GPU, p[1], p[0])
					}
					if p[1] >= 35*time.Second {
						long++
					}
				}
				if hours := (ss[len(ss)-1].at - ss[0].at).Hours(); long < int(hours*60/65) || float64(long) > hours*60/25 {
					t.Errorf("GPU %d: %d checkpoints in %.1f h, want one every 28-58 min", g.GPU, long, hours)
				}
			}
		})
	}
}
