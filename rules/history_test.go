package rules

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestHistoryAveragesEachMinute(t *testing.T) {
	var h history
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := range 90 { // every 20 s for 30 minutes, value = the minute
		at := base.Add(time.Duration(i) * 20 * time.Second)
		h.add(at, float64(at.Sub(base)/time.Minute))
	}
	h.add(base.Add(29*time.Minute+50*time.Second), math.NaN()) // ignored
	end := base.Add(29*time.Minute + 59*time.Second)
	got := h.series(end)
	for k, v := range got {
		if v != float64(k) {
			t.Fatalf("minute %d: got %v, want %v (series %v)", k, v, k, got)
		}
	}
	// Ten minutes later the first ten minutes have rolled out and the
	// minutes since hold nothing.
	got = h.series(end.Add(10 * time.Minute))
	if got[0] != 10 || !math.IsNaN(got[29]) || !math.IsNaN(got[20]) || got[19] != 29 {
		t.Errorf("after 10 more minutes: %v", got)
	}
}

// A history whose last half hour reaches back before the Unix epoch (a
// replay of a log shifted there, a clock at zero) is read like any other.
func TestHistoryAroundTheEpoch(t *testing.T) {
	for _, base := range []time.Time{time.Unix(0, 0), time.Unix(-45*60, 0)} {
		var h history
		for i := range 10 { // a sample a minute, value = the minute
			h.add(base.Add(time.Duration(i)*time.Minute), float64(i))
		}
		got := h.series(base.Add(9 * time.Minute))
		for k, v := range got {
			want := math.NaN()
			if k >= historySteps-10 {
				want = float64(k - (historySteps - 10))
			}
			if v != want && !(math.IsNaN(v) && math.IsNaN(want)) {
				t.Fatalf("from %v: minute %d: got %v, want %v (series %v)", base, k, v, want, got)
			}
		}
	}
}

// TestHistoryKeepsEveryMinuteAsAddedInPlace checks a history (alone, and
// one of several sharing a block) against the plain reading of its
// contract: every minute kept in its bucket of the half hour, a sample
// restarting a bucket that held another minute. Times mostly go on, by
// steps shorter and longer than a minute, and sometimes go back, up to
// past the half hour; some samples are NaN.
func TestHistoryKeepsEveryMinuteAsAddedInPlace(t *testing.T) {
	type ref struct {
		minute [historySteps]int64
		sum    [historySteps]float64
		count  [historySteps]int
	}
	add := func(r *ref, m int64, v float64) {
		i := bucket(m)
		if r.minute[i] != m || r.count[i] == 0 {
			r.minute[i], r.sum[i], r.count[i] = m, 0, 0
		}
		r.sum[i] += v
		r.count[i]++
	}
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var alone history
		shared := newHistories(3)
		var refs [3]ref // shared[i]'s, with alone's the first
		at := base
		for step := range 400 {
			switch x := rng.IntN(20); {
			case x == 0:
				at = at.Add(-time.Duration(rng.IntN(40)) * time.Minute)
			case x < 3:
				at = at.Add(time.Duration(rng.IntN(5)) * time.Minute)
			default:
				at = at.Add(time.Duration(rng.IntN(40)) * time.Second)
			}
			v := float64(rng.IntN(100))
			if rng.IntN(10) == 0 {
				v = math.NaN()
			}
			alone.add(at, v)
			for i := range shared {
				shared[i].add(at, v+float64(i))
				if !math.IsNaN(v) {
					add(&refs[i], minuteOf(at), v+float64(i))
				}
			}
			end := at.Add(time.Duration(rng.IntN(5)-2) * time.Minute)
			last := minuteOf(end)
			for i, h := range []*history{&alone, &shared[0], &shared[1], &shared[2]} {
				r := &refs[max(i-1, 0)]
				got := h.series(end)
				for k := range got {
					m := last - int64(historySteps-1-k)
					want := math.NaN()
					if b := bucket(m); r.minute[b] == m && r.count[b] > 0 {
						want = r.sum[b] / float64(r.count[b])
					}
					if got[k] != want && !(math.IsNaN(got[k]) && math.IsNaN(want)) {
						t.Fatalf("seed %d step %d, history %d: minute %d of the series to %v is %v, want %v", seed, step, i, k, end, got[k], want)
					}
				}
			}
		}
	}
}
