package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// TruthFileFormat is the format of a TruthFile, as shared/traces/v2/score.py
// checks it.
const TruthFileFormat = "gpuwatch-truth/2"

// TruthFile is what happens in one run of a realistic scenario and what a
// good alerter says about it, in the format of the truths of the second
// trace set (shared/traces/v2/NAME.truth.json), which
// shared/traces/v2/score.py scores `gpuwatch replay --json` output against.
// Times are seconds from Start, to the tenth.
type TruthFile struct {
	Format    string         `json:"format"`
	Scenario  string         `json:"scenario"`
	Seed      uint64         `json:"seed"`
	Start     string         `json:"start"` // wall-clock time of t = 0, "YYYY/MM/DD HH:MM:SS"
	Step      Seconds        `json:"step_s"`
	Duration  Seconds        `json:"duration_s"` // time of the last sample
	Rows      int            `json:"rows"`       // rows of the CSV WriteCSV writes
	About     string         `json:"about"`
	GPUs      []TruthGPU     `json:"gpus"`
	Incidents []Incident     `json:"incidents"`
	Resolves  []ResolveCheck `json:"resolves"`
	Gaps      [][2]Seconds   `json:"gaps_s"` // the logger was down: no rows
	Notes     map[string]any `json:"notes"`
}

// TruthGPU is one GPU of a TruthFile and what it does.
type TruthGPU struct {
	GPU            int    `json:"gpu"`
	Name           string `json:"name"`
	UUID           string `json:"uuid"`
	MemoryTotalMiB int    `json:"memory_total_mib"`
	Role           string `json:"role"`
}

// Incident is something an alerter must report: an alert on GPU (any rule)
// by Deadline, or for a leak OOMAt − 30 min if that is earlier; the
// firings on the GPU in [From − 60 s, Until] belong to it, at most
// MaxFirings of any one rule.
type Incident struct {
	ID         string   `json:"id"`
	GPU        int      `json:"gpu"`
	Kind       string   `json:"kind"` // ExpectLeak, ExpectIdle, ExpectHot or ExpectLost
	From       Seconds  `json:"from_s"`
	Deadline   Seconds  `json:"deadline_s"`
	OOMAt      *Seconds `json:"oom_at_s,omitempty"`
	Until      Seconds  `json:"until_s"`
	MaxFirings int      `json:"max_firings"`
	Why        string   `json:"why"`
}

// ResolveCheck asks for at least one alert on GPU to resolve in [After,
// By]: an alert about a job that died must end.
type ResolveCheck struct {
	GPU   int     `json:"gpu"`
	After Seconds `json:"after_s"`
	By    Seconds `json:"by_s"`
	Why   string  `json:"why,omitempty"`
}

// Seconds is a time in seconds, written with one decimal as the truths of
// the second trace set have it.
type Seconds float64

// MarshalJSON writes s to the tenth of a second.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, math.Round(float64(s)*10)/10, 'f', 1, 64), nil
}

// seconds is d in Seconds, to the tenth.
func seconds(d time.Duration) Seconds { return Seconds(math.Round(d.Seconds()*10) / 10) }

// story is what a realistic scenario's plan says about itself, for its
// TruthFile: times as offsets from Start.
type story struct {
	about     string
	roles     []string // per GPU
	incidents []incident
	resolves  []resolveCheck
	notes     map[string]any
}

// incident is an Incident in the plan's terms.
type incident struct {
	id, kind, why         string
	gpu                   int
	from, deadline, until time.Duration
	oomAt                 time.Duration // 0: no OOM
	end                   time.Duration // when the problem itself ends (the job dies, the memory is freed)
	rateMiBPerMin         float64       // leaks
	maxFirings            int           // the most firings of any one rule; 0: 1
}

type resolveCheck struct {
	gpu       int
	after, by time.Duration
	why       string
}

// TruthFile returns the truth of the first run of a realistic scenario (the
// eleven of the second trace set, RealisticScenarios), a leak scenario
// (LeakScenarios) or a scenario of servers that run for days
// (DayScenarios), or nil for the others, whose truth is Truth.
func (s *Source) TruthFile() *TruthFile {
	p := s.build(rand.New(rand.NewPCG(s.cfg.Seed, planStream)))
	if p.story == nil {
		return nil
	}
	st := p.story
	tf := &TruthFile{
		Format:    TruthFileFormat,
		Scenario:  s.cfg.Scenario,
		Seed:      s.cfg.Seed,
		Start:     s.cfg.Start.Format("2006/01/02 15:04:05"),
		Step:      seconds(s.cfg.Step),
		About:     st.about,
		Incidents: []Incident{},
		Resolves:  []ResolveCheck{},
		Gaps:      [][2]Seconds{},
		Notes:     st.notes,
	}
	if tf.Notes == nil {
		tf.Notes = map[string]any{}
	}
	// Count the rows as Next and WriteCSV make them.
	for n := 0; n < s.perCycle; n++ {
		t := p.clock.at(n, s.cfg.Step)
		if t >= s.horizon {
			break
		}
		if p.clock.down(t) {
			continue
		}
		tf.Duration = seconds(t)
		for _, g := range p.gpus {
			if !g.lost(t) {
				tf.Rows++
			}
		}
	}
	for i, g := range p.gpus {
		tf.GPUs = append(tf.GPUs, TruthGPU{GPU: i, Name: g.name, UUID: s.uuids[i], MemoryTotalMiB: int(g.memMiB), Role: st.roles[i]})
	}
	for _, in := range st.incidents {
		out := Incident{
			ID: in.id, GPU: in.gpu, Kind: in.kind,
			From: seconds(in.from), Deadline: seconds(in.deadline), Until: seconds(in.until),
			MaxFirings: max(in.maxFirings, 1), Why: in.why,
		}
		if in.oomAt > 0 {
			oom := seconds(in.oomAt)
			out.OOMAt = &oom
		}
		tf.Incidents = append(tf.Incidents, out)
	}
	for _, rc := range st.resolves {
		tf.Resolves = append(tf.Resolves, ResolveCheck{GPU: rc.gpu, After: seconds(rc.after), By: seconds(rc.by), Why: rc.why})
	}
	for _, g := range p.clock.gaps {
		tf.Gaps = append(tf.Gaps, [2]Seconds{seconds(g.from), seconds(g.until)})
	}
	return tf
}

// WriteTruthFile writes tf as JSON, indented as the truths of the second
// trace set are.
func WriteTruthFile(w io.Writer, tf *TruthFile) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(tf); err != nil {
		return fmt.Errorf("sim: encode truth file: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("sim: write truth file: %w", err)
	}
	return nil
}

// legacyTruth is st told as Truths: one per incident, and a healthy one
// for each GPU without any.
func (st *story) legacyTruth(gpus int, duration time.Duration) []Truth {
	var out []Truth
	for i := range gpus {
		found := false
		for _, in := range st.incidents {
			if in.gpu != i {
				continue
			}
			found = true
			out = append(out, Truth{GPU: i, Expect: in.kind, From: in.from, Until: in.end, OOMAt: in.oomAt, RateMiBPerMin: in.rateMiBPerMin})
		}
		if !found {
			out = append(out, healthy(i, duration))
		}
	}
	return out
}
