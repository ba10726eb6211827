package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu/sim"
)

// keys lists the object keys of a JSON document in order, each with its
// path ("gpus[].role"), once each, leaving out the notes' (which differ
// from scenario to scenario).
func keys(t *testing.T, data []byte) []string {
	t.Helper()
	type frame struct {
		path    string
		object  bool
		key     string
		wantKey bool // an object's next token is a key
	}
	var stack []frame
	var out []string
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if k, ok := tok.(string); ok && top != nil && top.object && top.wantKey {
			top.key, top.wantKey = k, false
			if p := strings.TrimPrefix(top.path+"."+k, "."); !seen[p] && !strings.HasPrefix(p, "notes.") {
				seen[p] = true
				out = append(out, p)
			}
			continue
		}
		path := ""
		if top != nil {
			path = top.path + "[]"
			if top.object {
				path = top.path + "." + top.key
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{path: path, object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{path: path})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].wantKey = true
			}
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
	}
}

// TestTruthFileMatchesTheTraces writes each realistic scenario's truth
// file and compares it with the truth of its trace in shared/traces/v2:
// the same fields in the same order, the same notes, and what score.py
// needs to score it.
func TestTruthFileMatchesTheTraces(t *testing.T) {
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			want, err := os.ReadFile("testdata/v2/" + sc + ".truth.json")
			if err != nil {
				t.Fatal(err)
			}
			src, err := sim.New(sim.Config{Scenario: sc, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := sim.WriteTruthFile(&got, src.TruthFile()); err != nil {
				t.Fatal(err)
			}
			gk, wk := keys(t, got.Bytes()), keys(t, want)
			if !slices.Contains(wk, "gpus[].role") || !slices.Contains(wk, "notes") {
				t.Fatalf("the trace truth's fields %q miss gpus[].role or notes; fix keys", wk)
			}
			// The traces' truths leave out why a resolve is asked for
			// in one place; ours always say.
			gk = slices.DeleteFunc(gk, func(k string) bool { return k == "resolves[].why" })
			wk = slices.DeleteFunc(wk, func(k string) bool { return k == "resolves[].why" })
			if !slices.Equal(gk, wk) {
				t.Errorf("fields\n%q\nwant the trace truth's\n%q", gk, wk)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got.Bytes(), &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if gn, wn := sortedKeys(g["notes"]), sortedKeys(w["notes"]); !slices.Equal(gn, wn) {
				t.Errorf("notes %q, want the trace truth's %q", gn, wn)
			}
			for _, k := range []string{"format", "scenario", "seed", "start", "step_s"} {
				if g[k] != w[k] {
					t.Errorf("%s %v, want the trace truth's %v", k, g[k], w[k])
				}
			}
			if gi, wi := len(g["incidents"].([]any)), len(w["incidents"].([]any)); gi != wi {
				t.Errorf("%d incidents, the trace truth has %d", gi, wi)
			}
			if gr, wr := len(g["resolves"].([]any)), len(w["resolves"].([]any)); gr != wr {
				t.Errorf("%d resolves, the trace truth has %d", gr, wr)
			}
			// Times are written to the tenth, as the traces' truths are.
			if !tenths.MatchString(got.String()) {
				t.Errorf("step_s and duration_s not written with one decimal:\n%s", got.String())
			}
		})
	}
}

var tenths = regexp.MustCompile(`"step_s": \d+\.\d,\n "duration_s": \d+\.\d,`)

func sortedKeys(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTruthFileRules checks, for many seeds, that each incident follows
// the rules of the traces' truths: an idle GPU is due within an hour and
// its window ends a minute after the memory is freed; a lost GPU is due
// within 5 minutes and its window lasts to a minute after the end; a hot
// one is due within 10 minutes and its window lasts 10 minutes after the
// throttling; a leak is due 30 minutes before its OOM and its window ends
// a minute after it; every incident fires once.
func TestTruthFileRules(t *testing.T) {
	for _, sc := range sim.RealisticScenarios() {
		t.Run(sc, func(t *testing.T) {
			for _, seed := range realSeeds {
				src, err := sim.New(sim.Config{Scenario: sc, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				tf := src.TruthFile()
				nominal := src.Duration()
				if tf.Format != sim.TruthFileFormat || tf.Scenario != sc || tf.Seed != seed || tf.Start != "2026/11/29 09:00:00" {
					t.Errorf("seed %d: format %q scenario %q seed %d start %q", seed, tf.Format, tf.Scenario, tf.Seed, tf.Start)
				}
				for _, g := range tf.GPUs {
					if g.Role == "" || g.UUID == "" {
						t.Errorf("seed %d: GPU %d without role or UUID: %+v", seed, g.GPU, g)
					}
				}
				for _, in := range tf.Incidents {
					from := secs(in.From)
					due, until := secs(in.Deadline)-from, secs(in.Until)
					if in.MaxFirings != 1 || in.ID == "" || in.Why == "" {
						t.Errorf("seed %d: incident %+v", seed, in)
					}
					switch in.Kind {
					case sim.ExpectIdle:
						if due != time.Hour || in.OOMAt != nil {
							t.Errorf("seed %d: idle incident %+v, want due an hour after from", seed, in)
						}
					case sim.ExpectLost:
						if due != 5*time.Minute || until != nominal+time.Minute {
							t.Errorf("seed %d: lost incident %+v, want due in 5 min, until a minute after %v", seed, in, nominal)
						}
					case sim.ExpectHot:
						if due != 10*time.Minute {
							t.Errorf("seed %d: hot incident %+v, want due in 10 min", seed, in)
						}
					case sim.ExpectLeak:
						if in.OOMAt == nil || *in.OOMAt-in.Deadline != 1800 || in.Until-*in.OOMAt != 60 {
							t.Errorf("seed %d: leak incident %+v, want due 30 min before its OOM, until a minute after", seed, in)
						}
					default:
						t.Errorf("seed %d: incident of kind %q", seed, in.Kind)
					}
					if until <= from || secs(in.Deadline) > until {
						t.Errorf("seed %d: incident %+v out of order", seed, in)
					}
				}
				for _, rc := range tf.Resolves {
					if rc.By <= rc.After {
						t.Errorf("seed %d: resolve check %+v", seed, rc)
					}
				}
			}
		})
	}
}

// hasTruthFile reports whether scenario sc is one of those with a
// TruthFile: the realistic ones, the leaks and the servers that run for
// days.
func hasTruthFile(sc string) bool {
	return slices.Contains(slices.Concat(sim.RealisticScenarios(), sim.LeakScenarios(), sim.DayScenarios()), sc)
}

func TestTruthFileOnlyForRealisticLeakAndDayScenarios(t *testing.T) {
	for _, sc := range sim.Scenarios() {
		src, err := sim.New(sim.Config{Scenario: sc})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := src.TruthFile() != nil, hasTruthFile(sc); got != want {
			t.Errorf("%s: has a truth file %v, want %v", sc, got, want)
		}
	}
}

// TestTruthFileRoundTrip: what WriteTruthFile writes reads back the same,
// and a write error is reported.
func TestTruthFileRoundTrip(t *testing.T) {
	src, err := sim.New(sim.Config{Scenario: sim.ScenarioLeakRestart, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	tf := src.TruthFile()
	var buf bytes.Buffer
	if err := sim.WriteTruthFile(&buf, tf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(buf.String(), "}\n") || strings.Contains(buf.String(), `\u003e`) {
		t.Errorf("truth file does not end in a newline or escapes '>':\n%s", buf.String())
	}
	var back sim.TruthFile
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	tf.Notes, back.Notes = nil, nil // numbers come back as float64
	if !reflect.DeepEqual(*tf, back) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, *tf)
	}
	if err := sim.WriteTruthFile(failingWriter{}, tf); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteTruthFile to a failing writer: %v, want the disk full error", err)
	}
}
