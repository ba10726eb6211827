package sim_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// The behaviours of the scenarios of servers that run for days, as the
// fourth trace set (shared/traces/v4) shows them, checked for many seeds.

func TestModelReload(t *testing.T) {
	forRealSeeds(t, sim.ScenarioModelReload, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 0 {
			t.Fatalf("incidents %+v, want none", r.tf.Incidents)
		}
		for i := range r.tf.GPUs {
			ss := r.gpu(i)
			reloads := r.note(t, fmt.Sprintf("reloads_gpu%d_s", i))
			if len(reloads) == 0 {
				t.Fatalf("GPU %d never reloads", i)
			}
			for k := 0; k+1 < len(reloads); k += 2 {
				down, back := reloads[k], reloads[k+1]
				// Memory drops to nothing for seconds, then comes back
				// to the level it had.
				if m := minMiB(between(ss, down, down+5*time.Second)); m > 4 {
					t.Errorf("GPU %d at %v: %v MiB, want the memory freed", i, down, m)
				}
				before := mib(between(ss, down-time.Minute, down)[0])
				after := between(ss, back+time.Minute, back+2*time.Minute)
				if len(after) == 0 {
					continue // the run ends first
				}
				if got := mib(after[0]); math.Abs(got-before) > 2 {
					t.Errorf("GPU %d: %v MiB before the reload at %v, %v MiB after; want the same", i, before, down, got)
				}
				if gap := back - down; gap > 3*time.Minute {
					t.Errorf("GPU %d: the reload at %v takes %v, want a minute or two", i, down, gap)
				}
			}
		}
	})
}

func TestFragCreep(t *testing.T) {
	forRealSeeds(t, sim.ScenarioFragCreep, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		from := secs(in.From)
		if lasts := oom - from; lasts < 2*time.Hour || lasts > 11*time.Hour {
			t.Errorf("the creep runs %v to its OOM, want 3-10 hours or so", lasts)
		}
		checkOOM(t, r, in.GPU, ss, oom, 95)
		// Steps of a few MiB, in bursts with flat stretches: over the
		// creep, the floor rises in some 10-minute windows and stays in
		// others.
		rose, flat := 0, 0
		for at := from + 10*time.Minute; at+10*time.Minute < oom; at += 10 * time.Minute {
			if minMiB(between(ss, at, at+10*time.Minute))-minMiB(between(ss, at-10*time.Minute, at)) > 20 {
				rose++
			} else {
				flat++
			}
		}
		if rose == 0 || flat == 0 {
			t.Errorf("the floor rose in %d and stayed in %d 10-minute windows, want bursts and flat stretches", rose, flat)
		}
		if next := r.note(t, "next_job_s")[0]; next < oom || next > oom+15*time.Minute || minMiB(between(ss, next+10*time.Minute, next+20*time.Minute)) < 1024 {
			t.Errorf("the next job starts at %v, after the OOM at %v; want a job within 15 minutes", next, oom)
		}
		if len(r.tf.Resolves) != 1 || r.tf.Resolves[0].GPU != in.GPU {
			t.Errorf("resolves %+v, want the leak's alert to end at its OOM", r.tf.Resolves)
		}
	})
}

func TestOOMRetryLoop(t *testing.T) {
	forRealSeeds(t, sim.ScenarioOOMRetryLoop, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 1 || r.tf.Incidents[0].MaxFirings != 2 {
			t.Fatalf("incidents %+v, want one, with 2 firings of a rule allowed", r.tf.Incidents)
		}
		in := r.tf.Incidents[0]
		ss := r.gpu(in.GPU)
		ooms := r.note(t, "ooms_s")
		if n := len(ooms); n < 6 || n > 12 {
			t.Errorf("%d OOMs, want 6-12", n)
		}
		total := allocatableMiB(r, in.GPU, ss)
		for k, oom := range ooms {
			// Nearly full just before, freed at once, started again
			// within seconds.
			if p := 100 * maxMiB(between(ss, oom-time.Minute, oom)) / total; p < 95 {
				t.Errorf("OOM %d at %v: %.1f%% just before, want 95%% or more", k, oom, p)
			}
			if m := minMiB(between(ss, oom, oom+10*time.Second)); m > 4 {
				t.Errorf("OOM %d at %v: %v MiB just after, want the memory freed", k, oom, m)
			}
			if k > 0 {
				if run := oom - ooms[k-1]; run < 2*time.Minute || run > 11*time.Minute {
					t.Errorf("run %d lives %v, want 3-10 minutes", k, run)
				}
			}
		}
		if k := len(ooms) - 1; secs(in.Until) != ooms[k]+time.Minute {
			t.Errorf("the incident ends at %v, want a minute after the last OOM at %v", secs(in.Until), ooms[k])
		}
		ramp := r.tf.Notes["variant"] == "ramp"
		want := ooms[0] + 30*time.Minute
		if ramp {
			want = ooms[0] - 5*time.Minute
		}
		if due := secs(in.Deadline); (due - want).Abs() > 100*time.Millisecond {
			t.Errorf("%v: due at %v with the first OOM at %v", r.tf.Notes["variant"], due, ooms[0])
		}
		// The same job every time: one user, one command.
		var who []string
		for _, s := range ss {
			for _, p := range s.Processes {
				if s.at < ooms[len(ooms)-1] {
					who = append(who, p.User+" "+p.Command)
				}
			}
		}
		for _, w := range who {
			if w != who[0] {
				t.Fatalf("the dying runs are %q and %q, want one job", who[0], w)
			}
		}
	})
}

func TestDayNightInference(t *testing.T) {
	forRealSeeds(t, sim.ScenarioDayNightInference, func(t *testing.T, r realTrace) {
		if len(r.tf.Incidents) != 0 {
			t.Fatalf("incidents %+v, want none", r.tf.Incidents)
		}
		night := r.tf.Notes["night_hit_rate"].(float64)
		for i := range r.tf.GPUs {
			ss := r.gpu(i)
			// Exactly flat, at 70-90%, once loaded.
			loaded := between(ss, 20*time.Minute, secs(r.tf.Duration))
			if lo, hi := minMiB(loaded), maxMiB(loaded); hi != lo || hi/allocatableMiB(r, i, ss) < 0.69 || hi/allocatableMiB(r, i, ss) > 0.91 {
				t.Errorf("GPU %d holds %v-%v MiB once loaded, want one level at 70-90%%", i, lo, hi)
			}
			// Busy in the afternoon, a trickle at night: the quietest
			// hour (~03:00) catches a request in about night of its
			// samples, never none in 45 minutes.
			for day := range 3 {
				quiet := between(ss, time.Duration(day)*24*time.Hour+17*time.Hour+30*time.Minute, time.Duration(day)*24*time.Hour+18*time.Hour+30*time.Minute)
				busy := between(ss, time.Duration(day)*24*time.Hour+5*time.Hour, time.Duration(day)*24*time.Hour+7*time.Hour)
				if share := shareOf(quiet, func(s sample) bool { return s.UtilGPU > 0 }); share < night*0.5 || share > night*1.5+0.05 {
					t.Errorf("GPU %d, night %d: %.2f of the samples busy, want about %.2f", i, day, share, night)
				}
				if share := shareOf(busy, func(s sample) bool { return s.UtilGPU > 0 }); share < 0.85 {
					t.Errorf("GPU %d, day %d: %.2f of the afternoon's samples busy, want nearly all", i, day, share)
				}
				for at := quiet[0].at; at+45*time.Minute <= quiet[len(quiet)-1].at; at += 5 * time.Minute {
					if shareOf(between(ss, at, at+45*time.Minute), func(s sample) bool { return s.UtilGPU >= 5 }) == 0 {
						t.Errorf("GPU %d: no request from %v for 45 minutes, want a trickle", i, at)
					}
				}
			}
		}
	})
}

// shareOf is the share of ss for which f holds.
func shareOf(ss []sample, f func(sample) bool) float64 {
	n := 0
	for _, s := range ss {
		if f(s) {
			n++
		}
	}
	return float64(n) / float64(len(ss))
}

func TestSlowLeak80GB(t *testing.T) {
	forRealSeeds(t, sim.ScenarioSlowLeak80GB, func(t *testing.T, r realTrace) {
		in, ss, oom := leakOf(t, r)
		if secs(in.Deadline) != oom-4*time.Hour {
			t.Errorf("due at %v, want 4 hours before the OOM at %v", secs(in.Deadline), oom)
		}
		if oom < 40*time.Hour || oom > 70*time.Hour {
			t.Errorf("OOM at %v, want after two to three days", oom)
		}
		total := allocatableMiB(r, in.GPU, ss)
		if p := 100 * maxMiB(between(ss, oom-10*time.Minute, oom)) / total; p < 97 {
			t.Errorf("%.1f%% in the 10 minutes before the OOM at %v, want 97%% or more", p, oom)
		}
		checkRate(t, r, in, ss, oom, 0.8, 5)
		rest := minMiB(ss) // the GPU's resting level
		var start time.Duration
		for _, s := range ss {
			if mib(s) > rest+100 {
				start = s.at
				break
			}
		}
		if p := minMiB(between(ss, start+12*time.Minute, start+30*time.Minute)) / total; p < 0.79 || p > 0.94 {
			t.Errorf("a plateau at %.1f%%, want 80-93%%", 100*p)
		}
		// The server starts again after its OOM, with the same climb;
		// until then the GPU rests.
		restart := r.note(t, "restart_s")[0]
		if m := maxMiB(between(ss, oom+10*time.Second, restart)); m > rest+4 {
			t.Errorf("%v MiB between the OOM at %v and the restart at %v, want the GPU at rest", m, oom, restart)
		}
		if p := minMiB(between(ss, restart+12*time.Minute, restart+30*time.Minute)) / total; restart > oom+10*time.Minute || p < 0.79 {
			t.Errorf("restarted at %v (OOM at %v), at %.1f%% after; want within minutes, at its plateau", restart, oom, 100*p)
		}
		// The other GPU rests at its resting level between its jobs.
		o := 1 - in.GPU
		os := r.gpu(o)
		rest = r.tf.Notes["resting_mib"].(float64)
		if got := minMiB(os); got != rest {
			t.Errorf("GPU %d rests at %v MiB, the truth says %v", o, got, rest)
		}
		if shareOf(os, func(s sample) bool { return mib(s) == rest }) < 0.01 {
			t.Errorf("GPU %d never rests between its jobs", o)
		}
	})
}

func TestHotOscillation(t *testing.T) {
	forRealSeeds(t, sim.ScenarioHotOscillation, func(t *testing.T, r realTrace) {
		in := r.tf.Incidents[0]
		osc := r.note(t, "osc_s")
		hot := r.gpu(in.GPU)
		during := between(hot, osc[0]+5*time.Minute, osc[1])
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range during {
			lo, hi = math.Min(lo, s.TempC), math.Max(hi, s.TempC)
		}
		if lo < 81 || hi > 90 || hi < 87 {
			t.Errorf("GPU %d reads %v-%v C while it oscillates, want 83-88 C", in.GPU, lo, hi)
		}
		if above := shareOf(during, func(s sample) bool { return s.TempC > 85 }); above < 0.2 || above > 0.8 {
			t.Errorf("above 85 C in %.2f of the samples, want it swinging around the threshold", above)
		}
		for _, s := range between(hot, osc[1]+10*time.Minute, secs(r.tf.Duration)) {
			if s.TempC >= 80 {
				t.Fatalf("%v C at %v, want it cool after the oscillation", s.TempC, s.at)
			}
		}
		for _, s := range r.gpu(r.tf.Notes["neighbour_gpu"].(int)) {
			if s.TempC > 84 {
				t.Fatalf("the neighbour reads %v C at %v, want it below the threshold", s.TempC, s.at)
			}
		}
	})
}
