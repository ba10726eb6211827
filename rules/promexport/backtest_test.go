package promexport_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// The backtest: on each of the traces (nvidia-smi logs at one sample every
// 5 s), gpuwatch's own engine decides when each alert of the example rules
// fires and resolves; promtool then evaluates the exported rules over the
// same readings as the agents (or dcgm-exporter) export them, and checks
// that each alert fires and resolves within one evaluation interval of
// gpuwatch: at every transition, one interval before it the alert is as
// gpuwatch had it before, one interval after as gpuwatch had it after, and
// every ten minutes in between as gpuwatch had it then. Where a rule is
// approximate, the export says so; the test fails on any other difference.

// traceStep is the traces' sampling interval.
const traceStep = 5 * time.Second

// traceHost names the traces' machine.
const traceHost = "gpu-server"

var traceNames = []string{"normal-training", "memory-leak", "batch-spike", "idle-hog", "thermal"}

// v2Traces are the second set's traces at one sample every 5 s: hours of
// them, so the backtest takes them only when asked (-backtest.v2).
var v2Traces = []string{"v2/gpu-lost", "v2/leak-restart", "v2/thermal-cycle", "v2/idle-resume", "v2/tf-prealloc", "v2/tf-grab-all", "v2/creep-plateau", "v2/node8"}

var backtestV2 = flag.Bool("backtest.v2", false, "backtest on the second set of traces too (minutes)")

// readTrace reads a trace's snapshots, one per step from the epoch: the
// times promtool's tests start at, so both sides see the same samples at
// the same times. Each sample is a step after the one before, or more
// where the log has a gap; loggers drift a few milliseconds a sample.
// Utilization goes through the ratio agents export, as gpuwatch's hub
// reads it.
func readTrace(t *testing.T, path string) []*gpu.Snapshot {
	t.Helper()
	r, err := replay.Open(path, replay.Options{Host: traceHost})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var snaps []*gpu.Snapshot
	var last time.Time
	for {
		s, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return snaps
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) > 0 {
			for range max(1, int(s.Time.Sub(last).Round(traceStep)/traceStep)) - 1 {
				snaps = append(snaps, nil)
			}
		}
		last = s.Time
		s.Time = time.Unix(0, 0).UTC().Add(time.Duration(len(snaps)) * traceStep)
		for i := range s.Devices {
			d := &s.Devices[i]
			d.UtilGPU, d.UtilMem = 100*(d.UtilGPU/100), 100*(d.UtilMem/100)
		}
		snaps = append(snaps, s)
	}
}

// firing is, per rule, which GPUs fire after each step.
type firing map[string][]map[int]bool

// gpuwatchFiring runs gpuwatch's engine over the snapshots.
func gpuwatchFiring(rs []*rules.Rule, snaps []*gpu.Snapshot) (firing, map[string][]time.Duration) {
	e := rules.NewEngine(rs, rules.Options{})
	out := firing{}
	transitions := map[string][]time.Duration{}
	for _, r := range rs {
		out[r.Name] = make([]map[int]bool, len(snaps))
	}
	for i, s := range snaps {
		if s == nil { // no sample: the alerts stay as they were
			for _, r := range rs {
				if i > 0 {
					out[r.Name][i] = out[r.Name][i-1]
				}
			}
			continue
		}
		for _, tr := range e.Eval(s) {
			if !tr.Repeat {
				transitions[tr.Alert] = append(transitions[tr.Alert], time.Duration(i)*traceStep)
			}
		}
		for _, a := range e.Active() {
			if a.State == rules.StateFiring {
				if out[a.Rule.Name][i] == nil {
					out[a.Rule.Name][i] = map[int]bool{}
				}
				out[a.Rule.Name][i][a.GPU] = true
			}
		}
	}
	return out, transitions
}

// checkTimes are when the backtest compares: one evaluation interval before
// and after each transition, and every ten minutes.
func checkTimes(transitions []time.Duration, interval, end time.Duration) []time.Duration {
	var at []time.Duration
	for _, tr := range transitions {
		at = append(at, tr-interval, tr+interval)
	}
	for c := 10 * time.Minute; c < end; c += 10 * time.Minute {
		near := slices.ContainsFunc(transitions, func(tr time.Duration) bool { return c > tr-2*interval && c < tr+2*interval })
		if !near {
			at = append(at, c)
		}
	}
	at = slices.DeleteFunc(at, func(c time.Duration) bool { return c < 0 || c >= end })
	slices.Sort(at)
	return slices.Compact(at)
}

// backtestFile writes the promtool test of one trace.
func backtestFile(t *testing.T, schema promexport.Schema, rs []*rules.Rule, interval time.Duration, trace string, snaps []*gpu.Snapshot) (text string, checks int, transitions map[string][]time.Duration) {
	fire, transitions := gpuwatchFiring(rs, snaps)
	uuids := map[int]string{}
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, d := range s.Devices {
			uuids[d.Index] = d.UUID
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [rules.yml]\nevaluation_interval: %s\ntests:\n  - name: %s\n    interval: %s\n    input_series:\n",
		interval, trace, traceStep)
	for _, s := range promexport.Series(schema, snaps) {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", s.Series, s.Values)
	}
	b.WriteString("    promql_expr_test:\n")
	end := time.Duration(len(snaps)) * traceStep
	for _, r := range rs {
		for _, at := range checkTimes(transitions[r.Name], interval, end) {
			checks++
			fmt.Fprintf(&b, "      - expr: 'ALERTS{alertname=\"%s\", alertstate=\"firing\"}'\n        eval_time: %s\n", r.Name, at)
			gpus := slices.Sorted(maps.Keys(fire[r.Name][int(at/traceStep)]))
			if len(gpus) == 0 {
				b.WriteString("        exp_samples: []\n")
				continue
			}
			b.WriteString("        exp_samples:\n")
			for _, g := range gpus {
				fmt.Fprintf(&b, "          - labels: 'ALERTS{alertname=\"%s\", alertstate=\"firing\", gpu=\"%d\", host=\"%s\", severity=\"%s\", uuid=\"%s\"}'\n            value: 1\n",
					r.Name, g, traceHost, r.Severity, uuids[g])
			}
		}
	}
	return b.String(), checks, transitions
}

func exampleRules(t *testing.T) []*rules.Rule {
	t.Helper()
	cfg, err := config.Parse("config.example.yaml", gpuwatch.ExampleConfig, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Rules
}

// TestBacktest compares the exported example rules with gpuwatch replay on
// the five traces, for both schemas.
func TestBacktest(t *testing.T) {
	if raceDetector {
		t.Skip("runs promtool over two hours of five traces (not with -race)")
	}
	suites.Fleet(t)
	rs := exampleRules(t)
	interval := traceStep
	traces := traceNames
	if *backtestV2 {
		traces = append(slices.Clone(traces), v2Traces...)
	}
	for _, schema := range []promexport.Schema{promexport.SchemaGPUWatch, promexport.SchemaDCGM} {
		t.Run(string(schema), func(t *testing.T) {
			t.Parallel()
			f, err := promexport.Export(rs, promexport.Options{Schema: schema, Interval: interval, Source: "config.example.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			approximate := map[string]bool{}
			for _, n := range f.Notes {
				if n.Kind == promexport.Approximate || n.Kind == promexport.LeftOut {
					approximate[n.Rule] = true
				}
			}
			var ruleFile bytes.Buffer
			if err := f.Write(&ruleFile); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			outcome := map[string]map[string]string{} // rule → trace → outcome
			t.Cleanup(func() { logOutcomes(t, rs, traces, outcome, approximate) })
			for _, trace := range traces {
				t.Run(trace, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					writeFile(t, dir, "rules.yml", ruleFile.Bytes())
					text, checks, transitions := backtestFile(t, schema, rs, interval, trace, readTrace(t, tracePath(t, trace)))
					writeFile(t, dir, "backtest.yml", []byte(text))
					out, _ := promtool(t, dir, "test", "rules", "backtest.yml")
					fails := failedChecks(t, out)
					if checks == 0 {
						t.Fatalf("no checks on %s", trace)
					}
					mu.Lock()
					defer mu.Unlock()
					for _, r := range rs {
						var at []string
						for _, f := range fails {
							if f.alert == r.Name {
								at = append(at, f.at)
							}
						}
						result := fmt.Sprintf("same (%d transitions)", len(transitions[r.Name]))
						if len(at) > 0 {
							result = fmt.Sprintf("differs at %s (%d transitions)", strings.Join(at, ", "), len(transitions[r.Name]))
							if !approximate[r.Name] {
								for _, f := range fails {
									if f.alert == r.Name {
										t.Errorf("%s on %s: the exported rule, which the export does not call approximate, differs from gpuwatch replay:\n%s", r.Name, trace, f.detail)
									}
								}
							}
						}
						if outcome[r.Name] == nil {
							outcome[r.Name] = map[string]string{}
						}
						outcome[r.Name][trace] = result
					}
				})
			}
		})
	}
}

// tracePath finds a trace's log, compressed or not.
func tracePath(t *testing.T, name string) string {
	t.Helper()
	base := filepath.Join("..", "..", "cli", "testdata", "traces", name)
	for _, ext := range []string{".csv", ".csv.gz"} {
		if _, err := os.Stat(base + ext); err == nil {
			return base + ext
		}
	}
	t.Fatalf("no trace %s", base)
	return ""
}

func logOutcomes(t *testing.T, rs []*rules.Rule, traces []string, outcome map[string]map[string]string, approximate map[string]bool) {
	var b strings.Builder
	fmt.Fprintf(&b, "backtest against gpuwatch replay (checks one evaluation before and after each transition, and every 10 minutes):\n")
	for _, r := range rs {
		mark := ""
		if approximate[r.Name] {
			mark = " (approximate)"
		}
		fmt.Fprintf(&b, "  %s%s\n", r.Name, mark)
		for _, trace := range traces {
			fmt.Fprintf(&b, "    %-18s %s\n", trace, outcome[r.Name][trace])
		}
	}
	t.Log(b.String())
}
