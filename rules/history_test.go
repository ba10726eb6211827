package rules

import (
	"math"
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
