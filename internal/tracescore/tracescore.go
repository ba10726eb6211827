// Package tracescore judges the alerts gpuwatch raised on a GPU trace
// against the trace's truth: what happened on each GPU and what a good
// alerter says about it. It implements the scoring contract of the
// realistic traces (format "gpuwatch-truth/2", scored by score.py beside
// them), so that tests can score replays of recorded traces and of
// simulated seeds of the same workloads in-process:
//
//   - caught: an incident's first firing (any alert, its GPU) in
//     [from_s − 60, until_s] is no later than its deadline (for a leak,
//     also at least 30 minutes before the OOM);
//   - late: a firing in the window, but after the deadline; missed: none;
//   - false: a firing on a GPU outside every incident window of that GPU;
//   - flaps: one alert firing more than max_firings times in a window;
//   - unresolved: a required resolve (a job that died) with no resolved
//     event on its GPU in its interval.
//
// Times are read as wall-clock seconds from the truth's start, truncated to
// the second, as the contract does. Reminders (Event.Repeat) are not new
// firings.
package tracescore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Format is the truth format this package reads.
const Format = "gpuwatch-truth/2"

// oomLead is how long before an OOM a leak must be warned about.
const oomLead = 30 * time.Minute

// windowLead is how long before an incident's start a firing still belongs
// to it.
const windowLead = 60

// Truth is what happened in a trace.
type Truth struct {
	Format    string     `json:"format"`
	Scenario  string     `json:"scenario"`
	Seed      int64      `json:"seed"`
	Start     string     `json:"start"` // "2006/01/02 15:04:05", the wall-clock time of t = 0
	DurationS float64    `json:"duration_s"`
	Incidents []Incident `json:"incidents"`
	Resolves  []Resolve  `json:"resolves"`
}

// Incident is one problem on one GPU that people must hear about.
type Incident struct {
	ID         string   `json:"id"`
	GPU        int      `json:"gpu"`
	Kind       string   `json:"kind"` // leak, idle, hot, lost: information only
	FromS      float64  `json:"from_s"`
	DeadlineS  float64  `json:"deadline_s"`
	UntilS     float64  `json:"until_s"`
	MaxFirings int      `json:"max_firings"`
	OOMAtS     *float64 `json:"oom_at_s"`
}

// Resolve requires an alert on a GPU to resolve within an interval (a job
// died and freed its memory).
type Resolve struct {
	GPU    int     `json:"gpu"`
	AfterS float64 `json:"after_s"`
	ByS    float64 `json:"by_s"`
	Why    string  `json:"why"`
}

// ParseTruth reads a truth file's JSON.
func ParseTruth(data []byte) (*Truth, error) {
	var t Truth
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	if t.Format != Format {
		return nil, fmt.Errorf("truth: format %q, want %q", t.Format, Format)
	}
	if _, err := t.start(); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *Truth) start() (time.Time, error) {
	s, err := time.Parse("2006/01/02 15:04:05", t.Start)
	if err != nil {
		return time.Time{}, fmt.Errorf("truth: start %q: %w", t.Start, err)
	}
	return s, nil
}

// Event is one transition of an alert, as `gpuwatch replay --json` prints it.
type Event struct {
	At     time.Time
	Alert  string
	GPU    int
	Firing bool // firing, else resolved
	Repeat bool // a reminder of an alert already announced
}

// IncidentResult is how one incident was handled.
type IncidentResult struct {
	Incident
	Caught, Late, Missed bool
	First                string        // the alert that fired first
	FirstAt              float64       // seconds from the start
	LeadBeforeOOM        time.Duration // how long before the OOM it fired; 0 without an OOM
	Flapping             []string      // "GPUMemoryLeak x3 > 1"
	Firings              map[string]int
}

// Result is the verdict on a trace.
type Result struct {
	OK         bool
	Incidents  []IncidentResult
	False      []Event // firings outside every incident
	Unresolved []Resolve
	start      time.Time
}

// Summary is the one-line verdict, as score.py prints it.
func (r *Result) Summary() string {
	var caught, late, missed, flaps int
	for _, in := range r.Incidents {
		switch {
		case in.Caught:
			caught++
		case in.Late:
			late++
		default:
			missed++
		}
		if len(in.Flapping) > 0 {
			flaps++
		}
	}
	return fmt.Sprintf("caught %d/%d late %d missed %d false %d flaps %d unresolved %d",
		caught, len(r.Incidents), late, missed, len(r.False), flaps, len(r.Unresolved))
}

// Details lists what happened per incident, each false alarm and each
// missing resolve, one line each.
func (r *Result) Details() []string {
	var out []string
	for _, in := range r.Incidents {
		line := fmt.Sprintf("%s (%s gpu%d from %s): ", in.ID, in.Kind, in.GPU, clock(in.FromS))
		switch {
		case in.Missed:
			line += "MISSED"
		case in.Caught:
			line += fmt.Sprintf("caught by %s at %s", in.First, clock(in.FirstAt))
		default:
			line += fmt.Sprintf("LATE: %s at %s, due by %s", in.First, clock(in.FirstAt), clock(in.DeadlineS))
		}
		if in.OOMAtS != nil && !in.Missed {
			line += fmt.Sprintf(", %.1f min before the OOM", in.LeadBeforeOOM.Minutes())
		}
		if len(in.Flapping) > 0 {
			line += "; FLAPPING: " + strings.Join(in.Flapping, ", ")
		}
		out = append(out, line)
	}
	for _, e := range r.False {
		out = append(out, fmt.Sprintf("FALSE ALARM: %s on gpu%d at %s", e.Alert, e.GPU, clock(wall(e.At, r.start))))
	}
	for _, u := range r.Unresolved {
		out = append(out, fmt.Sprintf("UNRESOLVED: no alert on gpu%d resolved in %s-%s (%s)", u.GPU, clock(u.AfterS), clock(u.ByS), u.Why))
	}
	return out
}

// clock formats seconds from the start as H:MM:SS.
func clock(s float64) string {
	t := int(math.Round(s))
	return fmt.Sprintf("%d:%02d:%02d", t/3600, t%3600/60, t%60)
}

// wall returns at as seconds from start on the wall clock, truncated to the
// second: the time zone is dropped, as nvidia-smi logs local time.
func wall(at, start time.Time) float64 {
	w := time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
	return w.Sub(start).Seconds()
}

// Score judges events against the truth.
func Score(t *Truth, events []Event) (*Result, error) {
	start, err := t.start()
	if err != nil {
		return nil, err
	}
	type fired struct {
		Event
		t float64
	}
	var firings []fired
	for _, e := range events {
		if e.Firing && !e.Repeat {
			firings = append(firings, fired{e, wall(e.At, start)})
		}
	}
	slices.SortStableFunc(firings, func(a, b fired) int { return cmp.Compare(a.t, b.t) })
	r := &Result{OK: true, start: start}
	for _, in := range t.Incidents {
		res := IncidentResult{Incident: in, Firings: map[string]int{}}
		lo, hi := in.FromS-windowLead, in.UntilS
		due := in.DeadlineS
		if in.OOMAtS != nil {
			due = min(due, *in.OOMAtS-oomLead.Seconds())
		}
		res.FirstAt = math.NaN()
		for _, f := range firings {
			if f.GPU != in.GPU || f.t < lo || f.t > hi {
				continue
			}
			if math.IsNaN(res.FirstAt) {
				res.First, res.FirstAt = f.Alert, f.t
			}
			res.Firings[f.Alert]++
		}
		limit := max(in.MaxFirings, 1)
		for _, name := range slices.Sorted(maps.Keys(res.Firings)) {
			if n := res.Firings[name]; n > limit {
				res.Flapping = append(res.Flapping, fmt.Sprintf("%s x%d > %d", name, n, limit))
			}
		}
		switch {
		case math.IsNaN(res.FirstAt):
			res.Missed = true
		case res.FirstAt <= due:
			res.Caught = true
		default:
			res.Late = true
		}
		if in.OOMAtS != nil && !res.Missed {
			res.LeadBeforeOOM = time.Duration((*in.OOMAtS - res.FirstAt) * float64(time.Second))
		}
		r.OK = r.OK && res.Caught && len(res.Flapping) == 0
		r.Incidents = append(r.Incidents, res)
	}
	for _, f := range firings {
		inside := slices.ContainsFunc(t.Incidents, func(in Incident) bool {
			return in.GPU == f.GPU && in.FromS-windowLead <= f.t && f.t <= in.UntilS
		})
		if !inside {
			r.False = append(r.False, f.Event)
		}
	}
	for _, want := range t.Resolves {
		hit := slices.ContainsFunc(events, func(e Event) bool {
			at := wall(e.At, start)
			return !e.Firing && e.GPU == want.GPU && want.AfterS <= at && at <= want.ByS
		})
		if !hit {
			r.Unresolved = append(r.Unresolved, want)
		}
	}
	r.OK = r.OK && len(r.False) == 0 && len(r.Unresolved) == 0
	return r, nil
}
