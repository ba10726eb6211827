package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// quietJob is a warm job with no noise, for checking one habit at a time.
func quietJob(h *habits) *job {
	return &job{baseMiB: 10000, util: 90, habits: h}
}

func TestLeakGrowsInBlocks(t *testing.T) {
	for _, block := range []float64{4, 9, 12} {
		j := quietJob(&habits{leakBlockMiB: block})
		j.leakFrom, j.leakRate = 10*time.Minute, 47.4
		r := rand.New(rand.NewPCG(1, 2))
		prev := j.baseMiB
		for t0 := time.Duration(0); t0 < 5*time.Hour; t0 += 7 * time.Second {
			st := j.habits.at(j, t0, r, math.Inf(1))
			leaked := st.memMiB - j.baseMiB
			if math.Mod(leaked, block) != 0 {
				t.Fatalf("block %v: %v MiB leaked at %v, not whole blocks", block, leaked, t0)
			}
			if st.memMiB < prev {
				t.Fatalf("block %v: memory falls from %v to %v MiB at %v", block, prev, st.memMiB, t0)
			}
			prev = st.memMiB
			if want := j.leakRate * math.Max(0, (t0-j.leakFrom).Minutes()); leaked > want || leaked <= want-block {
				t.Fatalf("block %v: %v MiB leaked at %v, want the blocks of %v MiB", block, leaked, t0, want)
			}
		}
	}
}

func TestSawtooth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := newSawtooth(r, time.Minute, time.Hour, 20*time.Second, 2048)
	if s.at(time.Minute-time.Second) != 0 || s.at(2*time.Hour) != 0 {
		t.Errorf("churn outside its time: %v, %v", s.at(time.Minute-time.Second), s.at(2*time.Hour))
	}
	for k, end := range s.ends {
		begin := time.Minute
		if k > 0 {
			begin = s.ends[k-1]
		}
		if d := end - begin; d < 13*time.Second || d > 26*time.Second {
			t.Errorf("cycle %d lasts %v, want 20 s ± 35 %%", k, d)
		}
		if lo, hi := s.at(begin), s.at(end-time.Millisecond); lo != -1024 || hi < 1023 || hi >= 1024 {
			t.Errorf("cycle %d goes from %v to %v MiB, want -1024 to 1024", k, lo, hi)
		}
	}
	if s.ends[len(s.ends)-1] < time.Hour {
		t.Errorf("cycles end at %v, before the churn's end", s.ends[len(s.ends)-1])
	}
	if s.half() != 1024 || (*sawtooth)(nil).half() != 0 || (*sawtooth)(nil).at(time.Hour) != 0 {
		t.Errorf("half %v, nil half %v", s.half(), (*sawtooth)(nil).half())
	}
}

func TestClock(t *testing.T) {
	c := clock{lead: sampleLead, drift: 7 * time.Millisecond, jitter: sampleJitter, seed: 9,
		gaps: []span{{10 * time.Minute, 14 * time.Minute}, {time.Hour, time.Hour + 3*time.Minute}}}
	for _, step := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, time.Millisecond} {
		prev := time.Duration(-1)
		for n := range 5000 {
			at := c.at(n, step)
			if at <= prev {
				t.Fatalf("step %v: sample %d at %v, not after %v", step, n, at, prev)
			}
			prev = at
			beat := time.Duration(n) * (step + min(c.drift, step/50))
			if off := at - beat; off < 0 || off > min(c.lead, step/50)+min(c.jitter, step/100) {
				t.Fatalf("step %v: sample %d %v off its beat", step, n, off)
			}
		}
		if c.at(3, step) != c.at(3, step) {
			t.Errorf("sample times are not a function of n")
		}
	}
	for _, tt := range []struct {
		at   time.Duration
		down bool
	}{{0, false}, {10*time.Minute - 1, false}, {10 * time.Minute, true}, {12 * time.Minute, true}, {14 * time.Minute, false}, {time.Hour + time.Minute, true}, {2 * time.Hour, false}} {
		if got := c.down(tt.at); got != tt.down {
			t.Errorf("down(%v) = %v, want %v", tt.at, got, tt.down)
		}
	}
	var zero clock
	if got := zero.at(7, 5*time.Second); got != 35*time.Second {
		t.Errorf("the zero clock samples at %v, want exactly n × step", got)
	}
}

func TestSlowWarmupStepsGetRarer(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		j := quietJob(&habits{})
		j.start, j.baseMiB = 5*time.Minute, 40000
		within := slowWarmup(r, j)
		steps := j.habits.steps
		if within < 10*time.Minute || within > 20*time.Minute || len(steps) < 6 || len(steps) > 9 {
			t.Fatalf("seed %d: %d steps within %v", seed, len(steps), within)
		}
		if got := j.baseMiB + j.habits.stepsMiB(); math.Abs(got-40000) > 1e-6 {
			t.Errorf("seed %d: warms up to %v MiB, want the plateau 40000", seed, got)
		}
		if steps[0].at-j.start-j.ramp > 8*time.Second || steps[0].MiB < steps[1].MiB {
			t.Errorf("seed %d: first step %+v, want the largest, right after the %v ramp", seed, steps[0], j.ramp)
		}
		for k := 2; k < len(steps); k++ {
			if steps[k].at-steps[k-1].at <= steps[k-1].at-steps[k-2].at {
				t.Errorf("seed %d: steps at %v, %v, %v come no rarer", seed, steps[k-2].at, steps[k-1].at, steps[k].at)
			}
		}
		if last := steps[len(steps)-1].at - j.start; (last - within).Abs() > time.Second {
			t.Errorf("seed %d: last step %v after the start, want %v", seed, last, within)
		}
	}
}

func TestCreepStepsDouble(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 2))
		j := quietJob(&habits{})
		j.start, j.baseMiB = 4*time.Minute, 18000
		creep(r, j, 0.82*40960)
		steps := j.habits.steps
		if len(steps) < 5 || len(steps) > 6 {
			t.Fatalf("seed %d: %d steps", seed, len(steps))
		}
		for k, s := range steps {
			if s.MiB < 1.5*1024 || s.MiB > 2.5*1024 {
				t.Errorf("seed %d: step %d of %v MiB, want 1.5-2.5 GiB", seed, k, s.MiB)
			}
			want := 3 * time.Minute << k
			if got := s.at - j.start; got < want*9/10-time.Second || got > want*11/10 {
				t.Errorf("seed %d: step %d %v after the start, want %v ± 10 %%", seed, k, got, want)
			}
		}
		if j.plateauMiB() > 0.82*40960 {
			t.Errorf("seed %d: plateau %v MiB, above the cap", seed, j.plateauMiB())
		}
	}
}
