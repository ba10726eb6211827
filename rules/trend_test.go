package rules

import (
	"math"
	"math/rand/v2"
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

// FuzzTrend feeds a trend any sequence of samples: it never panics, is NaN
// exactly while not Ready (0 once restarted for a new series), and its rate
// is at least its value when positive.
func FuzzTrend(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, int64(time.Hour))
	f.Add([]byte{200, 0, 200, 0, 255, 1}, int64(time.Minute))
	f.Fuzz(func(t *testing.T, data []byte, span int64) {
		tr := NewTrend(time.Duration(span))
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
