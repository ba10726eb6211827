package digest

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// TestRollupsSparseLog: a log sampled every 30 minutes covers its time once
// the rollups bridge its step: each sample stands for the half hour before
// it, spread over the clock hours it spans; a gap of more than three steps
// is not covered; idle holds are counted.
func TestRollupsSparseLog(t *testing.T) {
	held := rollDev(0, 20*rollGiB, 100)
	held.Processes = []gpu.Process{{PID: 7, User: "alice", MemUsed: 20 * rollGiB}}
	// 08:45, 09:15, 09:45, 10:15, then a 2h gap (missed runs) to 12:15.
	times := []float64{-900, 900, 2700, 4500, 11700}

	r := NewRollups()
	for _, sec := range times {
		r.Update(rollSnap(sec, held))
	}
	if g, _ := rollTotals(r); g.Seconds != 0 {
		t.Errorf("without SetMaxGap: got %v s covered, want 0 (gaps over %v are not bridged)", g.Seconds, MaxBridgedGap)
	}

	r = NewRollups()
	r.SetMaxGap(MaxGapFor(30 * time.Minute))
	for _, sec := range times {
		r.Update(rollSnap(sec, held))
	}
	gpus, _, _ := r.Window(rollBase.Add(-time.Hour), rollBase.Add(4*time.Hour))
	want := map[time.Time]float64{ // by hour: the half hours that fall in it
		rollBase.Add(-time.Hour): 900,  // 08:45–09:00
		rollBase:                 3600, // 09:00–10:00
		rollBase.Add(time.Hour):  900,  // 10:00–10:15; 10:15–12:15 is a gap
	}
	got := map[time.Time]float64{}
	for _, h := range gpus {
		got[h.Hour] += h.Seconds
		if h.IdleHeldSeconds != h.Seconds {
			t.Errorf("%v: got %v s held idle of %v s, want all of it", h.Hour, h.IdleHeldSeconds, h.Seconds)
		}
		if h.EnergyJoules != 100*h.Seconds {
			t.Errorf("%v: got %v J, want %v (100 W)", h.Hour, h.EnergyJoules, 100*h.Seconds)
		}
	}
	for hour, secs := range want {
		if got[hour] != secs {
			t.Errorf("%v: got %v s covered, want %v", hour.Format("15:04"), got[hour], secs)
		}
	}
	g, users := rollTotals(r)
	if g.Seconds != 5400 || g.Samples != len(times) {
		t.Errorf("got %v s covered by %d samples, want 5400 s by %d", g.Seconds, g.Samples, len(times))
	}
	if u := users["alice"]; u.IdleHeldSeconds != 5400 {
		t.Errorf("alice: got %v s held idle, want 5400", u.IdleHeldSeconds)
	}
}

// TestReportSaysHowASparseLogCounts: the digest of a sparse log says how
// often it was sampled and how long a sample stands for.
func TestReportSaysHowASparseLogCounts(t *testing.T) {
	r := NewRollups()
	r.SetMaxGap(MaxGapFor(time.Hour))
	for i := range 5 {
		r.Update(rollSnap(float64(i*3600), rollDev(50, 2*rollGiB, 100)))
	}
	gpus, users, alerts := r.Window(rollBase, rollBase.Add(5*time.Hour))
	rep := Build(gpus, users, alerts, Options{Host: "h1", From: rollBase, To: rollBase.Add(4 * time.Hour), Step: time.Hour, MaxGap: MaxGapFor(time.Hour)})
	if want := "Sampled every 1h00m: each sample stands for the time since the one before, up to 3h00m (longer gaps are not covered)."; !strings.Contains(rep.Text(), want) {
		t.Errorf("got\n%s\nwant it to say %q", rep.Text(), want)
	}
	if rep.CoveredHours != 4 {
		t.Errorf("got %v hours covered, want 4", rep.CoveredHours)
	}
	dense := Build(gpus, users, alerts, Options{Host: "h1", Step: 5 * time.Second, MaxGap: MaxBridgedGap})
	if strings.Contains(dense.Text(), "Sampled every") {
		t.Errorf("a densely sampled log: got\n%s\nwant no word on sampling", dense.Text())
	}
}
