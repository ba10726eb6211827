package tracescore

import (
	"strings"
	"testing"
	"time"
)

const truthJSON = `{
 "format": "gpuwatch-truth/2", "scenario": "test", "seed": 1,
 "start": "2026/11/29 09:00:00", "duration_s": 10000,
 "incidents": [
  {"id": "leak", "gpu": 0, "kind": "leak", "from_s": 1000, "deadline_s": 8000, "until_s": 6060, "max_firings": 1, "oom_at_s": 6000},
  {"id": "idle", "gpu": 1, "kind": "idle", "from_s": 2000, "deadline_s": 5600, "until_s": 9000, "max_firings": 1}
 ],
 "resolves": [{"gpu": 0, "after_s": 5990, "by_s": 6300, "why": "the job died"}]
}`

func at(s float64) time.Time {
	return time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).Add(time.Duration(s * float64(time.Second)))
}

func TestScore(t *testing.T) {
	truth, err := ParseTruth([]byte(truthJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		events  []Event
		ok      bool
		summary string
		detail  string // a line Details must contain
	}{
		{"right", []Event{
			{At: at(3000), Alert: "Leak", GPU: 0, Firing: true},
			{At: at(3000 + 4*3600), Alert: "Leak", GPU: 0, Firing: true, Repeat: true}, // a reminder is not a firing
			{At: at(6000.7), Alert: "Leak", GPU: 0},
			{At: at(5000), Alert: "Idle", GPU: 1, Firing: true},
		}, true, "caught 2/2 late 0 missed 0 false 0 flaps 0 unresolved 0", "leak (leak gpu0 from 0:16:40): caught by Leak at 0:50:00, 50.0 min before the OOM"},
		{"leak warned less than 30 minutes before the OOM", []Event{
			{At: at(4500), Alert: "Leak", GPU: 0, Firing: true},
			{At: at(6000), Alert: "Leak", GPU: 0},
			{At: at(5000), Alert: "Idle", GPU: 1, Firing: true},
		}, false, "caught 1/2 late 1 missed 0 false 0 flaps 0 unresolved 0", "LATE: Leak at 1:15:00, due by 2:13:20"},
		{"missed, a false alarm, no resolve", []Event{
			{At: at(100), Alert: "Hot", GPU: 1, Firing: true},
			{At: at(5000), Alert: "Idle", GPU: 1, Firing: true},
		}, false, "caught 1/2 late 0 missed 1 false 1 flaps 0 unresolved 1", "FALSE ALARM: Hot on gpu1 at 0:01:40"},
		{"flapping", []Event{
			{At: at(2000), Alert: "Leak", GPU: 0, Firing: true},
			{At: at(2100), Alert: "Leak", GPU: 0},
			{At: at(2200), Alert: "Leak", GPU: 0, Firing: true},
			{At: at(6000), Alert: "Leak", GPU: 0},
			{At: at(5000), Alert: "Idle", GPU: 1, Firing: true},
		}, false, "caught 2/2 late 0 missed 0 false 0 flaps 1 unresolved 0", "FLAPPING: Leak x2 > 1"},
		{"a resolve a fraction of a second early counts at the whole second", []Event{
			{At: at(3000), Alert: "Leak", GPU: 0, Firing: true},
			{At: at(5989.9), Alert: "Leak", GPU: 0},
			{At: at(5000), Alert: "Idle", GPU: 1, Firing: true},
		}, false, "caught 2/2 late 0 missed 0 false 0 flaps 0 unresolved 1", "UNRESOLVED: no alert on gpu0 resolved in 1:39:50-1:45:00 (the job died)"},
	} {
		res, err := Score(truth, tc.events)
		if err != nil {
			t.Fatal(err)
		}
		if res.OK != tc.ok || res.Summary() != tc.summary {
			t.Errorf("%s: got ok=%v %q, want ok=%v %q", tc.name, res.OK, res.Summary(), tc.ok, tc.summary)
		}
		if d := strings.Join(res.Details(), "\n"); !strings.Contains(d, tc.detail) {
			t.Errorf("%s: details\n%s\nwant a line containing %q", tc.name, d, tc.detail)
		}
	}
}

func TestParseTruthErrors(t *testing.T) {
	for _, bad := range []string{`{`, `{"format": "other"}`, `{"format": "gpuwatch-truth/2", "start": "yesterday"}`} {
		if _, err := ParseTruth([]byte(bad)); err == nil {
			t.Errorf("ParseTruth(%s): got no error", bad)
		}
	}
}
