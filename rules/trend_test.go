package rules

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// trendBase is a time on a slice boundary of every window the tests use.
var trendBase = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// feedTrend adds f(t) every step for n steps from trendBase and returns the
// trend after each.
func feedTrend(tr *Trend, step time.Duration, n int, f func(t time.Duration) float64) []float64 {
	out := make([]float64, n)
	for i := range n {
		t := time.Duration(i) * step
		tr.Add(trendBase.Add(t), f(t))
		out[i] = tr.Value()
	}
	return out
}

func TestTrendLinear(t *testing.T) {
	const perSec = 3.0 // the rate of a 180 MiB/min leak, in MiB/s
	for _, offset := range []time.Duration{0, 7 * time.Second, 90 * time.Second} {
		tr := NewTrend(time.Hour)
		got := feedTrend(tr, 5*time.Second, 1000, func(t time.Duration) float64 { return 1000 + perSec*(t+offset).Seconds() })
		last := got[len(got)-1]
		if math.Abs(last-perSec) > 1e-9 {
			t.Errorf("offset %v: trend of a line rising %v/s = %v, want %v", offset, perSec, last, perSec)
		}
	}
}

// TestTrendReadyAtHalfWindow steps a series across the moment its samples
// span half the window.
func TestTrendReadyAtHalfWindow(t *testing.T) {
	tr := NewTrend(time.Hour) // slices of 5m; ready when 6 slices apart
	for i, tc := range []struct {
		at    time.Duration
		ready bool
	}{
		{0, false},
		{5 * time.Minute, false},
		{29*time.Minute + 59*time.Second, false},
		{30 * time.Minute, true},
		{59 * time.Minute, true},
	} {
		tr.Add(trendBase.Add(tc.at), float64(i))
		if got := tr.Ready(); got != tc.ready {
			t.Errorf("after a sample at %v: Ready() = %v, want %v", tc.at, got, tc.ready)
		}
		if got := tr.Value(); math.IsNaN(got) == tc.ready {
			t.Errorf("after a sample at %v: Value() = %v, want NaN only while not ready", tc.at, got)
		}
	}
}

// TestTrendNeedsTwoThirdsOfTheWindow: growth that starts within the window
// is positive only once 8 of the 11 slice-to-slice changes show it.
func TestTrendNeedsTwoThirdsOfTheWindow(t *testing.T) {
	tr := NewTrend(time.Hour)
	leakFrom := 30 * time.Minute
	values := feedTrend(tr, 10*time.Second, 6*60*2, func(t time.Duration) float64 {
		if t < leakFrom {
			return 5000
		}
		return 5000 + 2*(t-leakFrom).Seconds()
	})
	for i, v := range values {
		at := time.Duration(i) * 10 * time.Second
		// The first slice that grows starts at 30m; its change is counted
		// once half of the next slice is in, at 37m30s, the 8th at 72m30s.
		want := at >= 72*time.Minute+30*time.Second
		if got := v > 0; got != want && at >= 30*time.Minute {
			t.Fatalf("at %v: trend %v, want positive: %v", at, v, want)
		}
	}
}

func TestTrendIgnoresSpikesAndSteps(t *testing.T) {
	const base = 40000.0
	for _, tc := range []struct {
		name string
		f    func(t time.Duration) float64
		want float64 // per second
	}{
		{"evaluation spikes on a plateau", func(t time.Duration) float64 {
			if t%(10*time.Minute) < 40*time.Second {
				return base + 2000
			}
			return base
		}, 0},
		{"evaluation spikes on a leak of 1/s", func(t time.Duration) float64 {
			v := base + t.Seconds()
			if t%(7*time.Minute) < 60*time.Second {
				v += 1500
			}
			return v
		}, 1},
		{"an allocator growing in ever rarer steps", func(t time.Duration) float64 {
			v := base
			for _, at := range []time.Duration{7, 11, 16, 29, 52, 103} {
				if t >= at*time.Minute {
					v += 2000
				}
			}
			return v
		}, 0},
	} {
		tr := NewTrend(time.Hour)
		got := feedTrend(tr, 5*time.Second, 12*60*3, tc.f)
		for i := 60 * 12; i < len(got); i++ { // once the window is full
			if math.Abs(got[i]-tc.want) > 1e-9 {
				t.Errorf("%s: at %v trend = %v/s, want %v/s", tc.name, time.Duration(i)*5*time.Second, got[i], tc.want)
				break
			}
		}
	}
}

// TestTrendNoise: a flat series with noise never trends up, however long.
func TestTrendNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tr := NewTrend(40 * time.Minute)
	got := feedTrend(tr, time.Second, 6*3600, func(t time.Duration) float64 {
		// A ±1 GiB sawtooth of the allocator every 20 s, plus noise.
		return 20000 + 1024*(float64(t%(20*time.Second))/float64(20*time.Second)) + r.NormFloat64()*30
	})
	for i, v := range got {
		if v > 0.2 { // MiB/s: 12 MiB/min
			t.Fatalf("at %v: trend of noise = %v/s, want about 0 or less", time.Duration(i)*time.Second, v)
		}
	}
}

// TestTrendGap: slices without samples share the change across them.
func TestTrendGap(t *testing.T) {
	tr := NewTrend(time.Hour)
	for i := 0; i < 12*60; i++ {
		at := time.Duration(i) * 5 * time.Second
		if at >= 20*time.Minute && at < 32*time.Minute { // the logger is down
			continue
		}
		tr.Add(trendBase.Add(at), at.Seconds()/2)
	}
	if got := tr.Value(); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("trend across a 12-minute gap = %v/s, want 0.5/s", got)
	}
}

func TestTrendWindowSlides(t *testing.T) {
	tr := NewTrend(time.Hour)
	feedTrend(tr, 5*time.Second, 12*60, func(t time.Duration) float64 { return t.Seconds() }) // an hour of growth
	// Then flat for an hour: the growth leaves the window.
	for i := 0; i < 12*60; i++ {
		tr.Add(trendBase.Add(time.Hour+time.Duration(i)*5*time.Second), 3600)
	}
	if got := tr.Value(); got != 0 {
		t.Errorf("trend an hour after growth stopped = %v, want 0", got)
	}
	// A gap longer than the window empties it.
	tr.Add(trendBase.Add(5*time.Hour), 1)
	if tr.Ready() {
		t.Errorf("Ready() after a gap longer than the window, want false")
	}
}

func TestTrendIgnoresTimeGoingBack(t *testing.T) {
	tr := NewTrend(time.Hour)
	feedTrend(tr, 5*time.Second, 12*60, func(t time.Duration) float64 { return t.Seconds() })
	before := tr.Value()
	tr.Add(trendBase, -1e9)
	if got := tr.Value(); got != before {
		t.Errorf("a sample from the past changed the trend from %v to %v", before, got)
	}
}

func TestTrendNaNKeepsWindowMoving(t *testing.T) {
	tr := NewTrend(time.Hour)
	feedTrend(tr, 5*time.Second, 12*60, func(t time.Duration) float64 { return t.Seconds() })
	tr.Add(trendBase.Add(3*time.Hour), math.NaN())
	if tr.Ready() {
		t.Errorf("Ready() after only unknown readings for two hours, want false")
	}
}

func TestTrendDoesNotAllocate(t *testing.T) {
	tr := NewTrend(time.Hour)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		tr.Add(trendBase.Add(time.Duration(i)*5*time.Second), float64(i%7))
		tr.Value()
		i++
	})
	if allocs != 0 {
		t.Errorf("Add and Value allocate %v times, want 0", allocs)
	}
}

func BenchmarkTrendAddValue(b *testing.B) {
	tr := NewTrend(time.Hour)
	r := rand.New(rand.NewPCG(3, 4))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		tr.Add(trendBase.Add(time.Duration(i)*5*time.Second), 40000+r.NormFloat64()*30)
		tr.Value()
		i++
	}
}

// FuzzTrend feeds a trend of one or several time scales any sequence of
// samples: it never panics, is NaN exactly while not Ready (0 once
// restarted for a new series), its rate is at least its value when
// positive, its peak is never negative, and its time to full is a number
// of seconds, never negative, +Inf when it does not grow.
func FuzzTrend(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, int64(time.Hour), int64(0))
	f.Add([]byte{200, 0, 200, 0, 255, 1}, int64(time.Minute), int64(time.Hour))
	f.Add([]byte{9, 1, 9, 2, 9, 3, 9, 4, 9, 5, 9, 6, 9, 7, 9, 8, 9, 9, 9, 10, 200, 10, 200, 10}, int64(2*time.Minute), int64(32*time.Minute))
	f.Fuzz(func(t *testing.T, data []byte, span, longest int64) {
		tr := NewTrendScales(time.Duration(span), time.Duration(longest))
		if n := tr.Scales(); n < 1 || n > MaxTrendScales {
			t.Fatalf("%d scales, want 1 to %d", n, MaxTrendScales)
		}
		at := trendBase
		restarted := false
		for i := 0; i+1 < len(data); i += 2 {
			at = at.Add(time.Duration(data[i]) * time.Second * 7)
			v := float64(data[i+1])
			switch data[i+1] {
			case 255:
				v = math.NaN()
			case 254:
				tr.Restart()
				restarted = true
			}
			tr.Add(at, v)
			value, rate := tr.Value(), tr.Rate()
			switch {
			case tr.Ready() && math.IsNaN(value):
				t.Fatalf("Value() = NaN while Ready()")
			case !tr.Ready() && restarted && value != 0:
				t.Fatalf("Value() = %v after Restart, before Ready(); want 0", value)
			case !tr.Ready() && !restarted && !math.IsNaN(value):
				t.Fatalf("Value() = %v before Ready(); want NaN", value)
			}
			if value > 0 && rate < value {
				t.Fatalf("Rate() = %v below Value() = %v", rate, value)
			}
			if p := tr.Peak(); p < 0 || tr.Ready() && math.IsNaN(p) {
				t.Fatalf("Peak() = %v while Ready() = %v", p, tr.Ready())
			}
			switch ttf := tr.TimeToFull(300); {
			case math.IsNaN(value) != math.IsNaN(ttf):
				t.Fatalf("TimeToFull = %v with Value() = %v", ttf, value)
			case ttf < 0:
				t.Fatalf("TimeToFull = %v, negative", ttf)
			case value <= 0 && !math.IsInf(ttf, 1):
				t.Fatalf("TimeToFull = %v with Value() = %v, want +Inf", ttf, value)
			}
		}
	})
}

// TestTrendSpikeAtSliceStart: an evaluation pass that begins with a slice
// does not become that slice's floor: the newest slice counts only once
// half of it is in, after the pass.
func TestTrendSpikeAtSliceStart(t *testing.T) {
	tr := NewTrend(40 * time.Minute) // slices of 200 s
	slice := 200 * time.Second
	for i := 0; i < 12*40; i++ { // 40 minutes flat at 5 s
		tr.Add(trendBase.Add(time.Duration(i)*5*time.Second), 40000)
	}
	start := trendBase.Add(12 * slice)
	for at := time.Duration(0); at < slice; at += 5 * time.Second {
		v := 40000.0
		if at < 40*time.Second {
			v = 42000 // a pass at the start of the slice
		}
		tr.Add(start.Add(at), v)
		if got := tr.Value(); got > 0 {
			t.Fatalf("%v into the slice: trend %v, want none from a pass", at, got)
		}
	}
}

func TestTrendScales(t *testing.T) {
	for _, tc := range []struct {
		span, longest time.Duration
		want          int
	}{
		{40 * time.Minute, 0, 1},
		{40 * time.Minute, 79 * time.Minute, 1},
		{40 * time.Minute, 80 * time.Minute, 2},
		{40 * time.Minute, 319 * time.Minute, 3},
		{40 * time.Minute, 320 * time.Minute, 4},
		{40 * time.Minute, 6 * time.Hour, 4},
		{time.Minute, 127 * time.Minute, 7},
		{time.Minute, 128 * time.Minute, 8},
		{time.Minute, 31 * 24 * time.Hour, 8},
	} {
		if got := NewTrendScales(tc.span, tc.longest).Scales(); got != tc.want {
			t.Errorf("NewTrendScales(%v, %v): %d scales, want %d", tc.span, tc.longest, got, tc.want)
		}
		if got, want := longestScale(tc.span, tc.longest), tc.span<<(tc.want-1); got != want {
			t.Errorf("longestScale(%v, %v) = %v, want %v", tc.span, tc.longest, got, want)
		}
	}
}

// staircase is memory that rises by block every period, flat with noise
// in between.
func staircase(r *rand.Rand, base, block float64, period time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 { return base + block*float64(t/period) + r.NormFloat64()*5 }
}

// TestTrendStaircase: a block of 1 GiB every 20 minutes is flat over most
// slices of 40 minutes, so trend(m, 40m) never rises; with its doublings
// up to 6h it rises at the scale whose slices (26m40s) are longer than the
// blocks' period, once about eight blocks have come, at about the rate of
// the blocks, and holds between blocks.
func TestTrendStaircase(t *testing.T) {
	const block, period = 1024.0, 20 * time.Minute
	want := block / period.Seconds()
	// Noise alone may rise in two-thirds of the slices, at a rate far
	// below the blocks'.
	one := feedTrend(NewTrend(40*time.Minute), 10*time.Second, 6*360, staircase(rand.New(rand.NewPCG(1, 2)), 30000, block, period))
	if slices.Max(one) > want/10 {
		t.Errorf("trend(m, 40m) of blocks 20 minutes apart rose to %v/s, want noise at most", slices.Max(one))
	}
	tr := NewTrendScales(40*time.Minute, 6*time.Hour)
	got := feedTrend(tr, 10*time.Second, 6*360, staircase(rand.New(rand.NewPCG(1, 2)), 30000, block, period))
	first := slices.IndexFunc(got, func(v float64) bool { return v > want/4 })
	if at := time.Duration(first) * 10 * time.Second; first < 0 || at < 2*time.Hour || at > 4*time.Hour+30*time.Minute {
		t.Fatalf("rising with the blocks first at %v, want once about eight blocks have come (2-4.5 h)", at)
	}
	for i := first; i < len(got); i++ {
		if got[i] <= want/4 {
			t.Fatalf("at %v, %v after it first rose: trend %v, want it to hold between blocks", time.Duration(i)*10*time.Second, time.Duration(i-first)*10*time.Second, got[i])
		}
	}
	if tr.Rate() < want/2 || tr.Rate() > 2*want {
		t.Errorf("rate %v/s, want about %v/s", tr.Rate(), want)
	}
}

// TestTrendCreepIsNotSteady: an allocator growing 2 GiB at 3, 6, 12, 24,
// 48 and 96 minutes with noise between rises in a few slices at every
// scale, never in two-thirds of them, whatever the noise adds.
func TestTrendCreepIsNotSteady(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		creep := func(at time.Duration) float64 {
			v := 20000.0
			for _, m := range []time.Duration{3, 6, 12, 24, 48, 96} {
				if at >= m*time.Minute {
					v += 2048
				}
			}
			return v + r.NormFloat64()*10
		}
		for _, tr := range []*Trend{NewTrendScales(40*time.Minute, 6*time.Hour), NewTrendScales(5*time.Minute, 6*time.Hour)} {
			tr.Restart()
			for i, v := range feedTrend(tr, 5*time.Second, 6*720, creep) {
				if ttf := tr.TimeToFull(80000); v > 0 && ttf < 24*3600 {
					t.Fatalf("seed %d, scales from %v: at %v trend %v/s, full in %.0f s; want no steady growth", seed, tr.Span(), time.Duration(i)*5*time.Second, v, ttf)
				}
			}
		}
	}
}

// TestTrendHoldsUntilHalf steps a trend of two scales (12m and 24m, slices
// of 1m and 2m) across the end of a rise, slice by slice: its growth holds
// until fewer than half of the slices of both scales rise, and drops to
// nothing then; a trend of one scale drops as soon as fewer than
// two-thirds do, or most of its newest do not.
func TestTrendHoldsUntilHalf(t *testing.T) {
	rise := func(at time.Duration) float64 { return 1000 + min(at, 30*time.Minute).Seconds() } // 1/s for 30 minutes, then flat
	for _, tc := range []struct {
		name    string
		tr      *Trend
		lastPos time.Duration // the last sample at which the trend is positive
	}{
		// 12m: changes from flat slices count once half of the slice is
		// in, at 31m30s, 32m30s and 33m30s: the third leaves only two of
		// the five newest changes rising, and growth that has stopped in
		// the newer half of the window is not steady.
		{"one scale", NewTrend(12 * time.Minute), 33*time.Minute + 20*time.Second},
		// 24m: its changes from flat slices count at 33m, 35m, 37m, 39m
		// and 41m; at 42m the slice 42m-44m begins, and until half of it
		// is in it counts as no change: the sixth that is not a rise.
		{"two scales", NewTrendScales(12*time.Minute, 24*time.Minute), 41*time.Minute + 50*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := feedTrend(tc.tr, 10*time.Second, 6*60, rise)
			for i, v := range got {
				at := time.Duration(i) * 10 * time.Second
				// Rising in 8 of the 11 changes of 12m once the 8th
				// counts, at 8m30s.
				if want := at >= 8*time.Minute+30*time.Second && at <= tc.lastPos; (v > 0) != want {
					t.Errorf("at %v: trend %v, want positive: %v", at, v, want)
				}
				if at > 31*time.Minute && at <= tc.lastPos && math.Abs(v-1) > 1e-9 {
					t.Errorf("at %v: trend %v, want the rate it held, 1/s", at, v)
				}
			}
		})
	}
}

// TestTrendPeak steps a pass (1500 for 20 s over a floor of 1000) across
// the slices that count it: its slice (the 4th of a 12-minute trend's
// 1-minute slices) is counted once the slice after next begins, and it
// leaves the window with its slice.
func TestTrendPeak(t *testing.T) {
	pass := func(at time.Duration) float64 {
		if at >= 15*time.Minute+10*time.Second && at < 15*time.Minute+30*time.Second {
			return 1500
		}
		return 1000
	}
	got := make(map[time.Duration]float64)
	tr := NewTrend(12 * time.Minute)
	for i := range 6 * 40 {
		at := time.Duration(i) * 10 * time.Second
		tr.Add(trendBase.Add(at), pass(at))
		got[at] = tr.Peak()
	}
	for at, want := range map[time.Duration]float64{
		15*time.Minute + 20*time.Second: 0,   // the pass, in the newest slice
		16*time.Minute + 50*time.Second: 0,   // its slice and the next are not both over
		17 * time.Minute:                500, // now they are
		26*time.Minute + 50*time.Second: 500,
		27 * time.Minute:                0, // its slice left the window
	} {
		if got[at] != want {
			t.Errorf("at %v: peak %v, want %v", at, got[at], want)
		}
	}
}

// TestTrendTimeToFull: the floor plus the peak reaches full at the rate
// memory grows; a pass at the newest samples is not taken for the floor.
func TestTrendTimeToFull(t *testing.T) {
	tr := NewTrend(12 * time.Minute)
	feedTrend(tr, 10*time.Second, 6*20, func(at time.Duration) float64 {
		v := 1000 + at.Seconds() // 1/s
		if at >= 15*time.Minute && at < 15*time.Minute+20*time.Second {
			v += 300 // a pass
		}
		if at >= 19*time.Minute+40*time.Second {
			v += 500 // another, in the newest samples
		}
		return v
	})
	// At 19m50s the floor is 1000+1190 (the newest slice's floor, 2140 at
	// 19m, grown 50 s since), not the pass at 19m40s; the peak of the
	// pass at 15m is 250: 2210 at 15m10s over the next slice's floor,
	// 1960 at 16m. Full at 5000 in 5000-2190-250 = 2560 s.
	if got := tr.TimeToFull(5000); math.Abs(got-2560) > 1 {
		t.Errorf("TimeToFull = %v s, want 2560", got)
	}
	if got := tr.TimeToFull(2000); got != 0 {
		t.Errorf("TimeToFull past full = %v, want 0", got)
	}
}
