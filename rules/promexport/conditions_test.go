package promexport_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// quantities are right sides that fit each dimension.
var quantities = map[rules.Dimension][]string{
	{Base: rules.Bytes}:                    {"1GiB", "500MB", "0"},
	{Base: rules.Percent}:                  {"95", "5%", "0.5"},
	{Base: rules.Celsius}:                  {"85C", "80"},
	{Base: rules.Watts}:                    {"300W", "0"},
	{Base: rules.Count}:                    {"3", "0", "79"},
	{Base: rules.Seconds}:                  {"10m", "90s", "0", "2h"},
	{Base: rules.Bytes, PerSecond: true}:   {"200MiB/min", "-1GiB/h", "0"},
	{Base: rules.Percent, PerSecond: true}: {"1%/min", "0"},
	{Base: rules.Celsius, PerSecond: true}: {"2C/min", "-0.1"},
	{Base: rules.Watts, PerSecond: true}:   {"5W/min"},
	{Base: rules.Count, PerSecond: true}:   {"1/min", "0.5"},
	{Base: rules.Seconds, PerSecond: true}: {"1"},
	{Base: rules.Hertz}:                    {"1980MHz", "1GHz", "0"},
	{Base: rules.Hertz, PerSecond: true}:   {"1MHz/min"},
}

var (
	functions = []string{"", "avg", "min", "max", "slope", "trend", "time_to_full", "rate", "active"}
	windows   = []string{"1m", "5m", "40m", "90s", "1500ms", "2h", "500ms"}
	ops       = []string{">", ">=", "<", "<=", "==", "!="}
)

// conditionCorpus is conditions of the rule language: every metric with
// every function and comparison, sets, and random nests of them with and,
// or, not and parentheses. Only the ones the parser accepts are kept.
func conditionCorpus(t *testing.T) []string {
	var leaves []string
	n := 0
	for _, m := range rules.Metrics() {
		for _, fn := range functions {
			for _, op := range ops {
				n++
				value := m.String()
				if fn != "" {
					value = fmt.Sprintf("%s(%s, %s)", fn, m, windows[n%len(windows)])
				}
				c, err := rules.ParseCond(value + " > 0")
				if err != nil {
					continue // a function the metric does not take
				}
				qs := quantities[c.ValueDimension()]
				leaves = append(leaves, fmt.Sprintf("%s %s %s", value, op, qs[n%len(qs)]))
			}
		}
	}
	leaves = append(leaves, "xid in (48, 79)", "xid in (13)", "temperature in (80, 81)", "xid > 0", "not xid in (79)", "utilization.gpu in (0)",
		`xid.fault == "hardware"`, `xid.action in ("reset", "reboot")`, `not xid.fault == "application"`, `xid.fault != "unknown"`,
		`count(xid in (13, 31, 43), 10m) >= 3`, `count(xid.fault == "application", 10m) >= 3`, `count(xid > 60, 5m) > 0`,
		`recovery_action != "none"`, `recovery_action in ("reset", "reboot")`)
	rng := rand.New(rand.NewPCG(1, 2))
	var nest func(depth int) string
	nest = func(depth int) string {
		if depth == 0 || rng.IntN(3) == 0 {
			return leaves[rng.IntN(len(leaves))]
		}
		switch rng.IntN(4) {
		case 0:
			return "not " + nest(depth-1)
		case 1:
			return "(" + nest(depth-1) + " or " + nest(depth-1) + ")"
		}
		return nest(depth-1) + " and " + nest(depth-1)
	}
	all := append([]string{}, leaves...)
	for range 200 {
		all = append(all, nest(3))
	}
	var out []string
	for _, c := range all {
		if _, err := rules.ParseCond(c); err == nil {
			out = append(out, c)
		}
	}
	if len(out) < 300 {
		t.Fatalf("the corpus has %d conditions the parser accepts; want hundreds", len(out))
	}
	return out
}

// leftOutWhy are the reasons a rule may be left out.
var leftOutWhy = regexp.MustCompile(`^(a window shorter than 1s holds at most one scrape in Prometheus|dcgm-exporter does not say how much memory a process holds|` +
	`the rule runs per process \(a window of process.memory\), and the exported rules see GPUs: .*|` +
	`dcgm-exporter does not export nvlink\.links(_down)?|dcgm-exporter's latest XID cannot count XIDs that repeat a code \(gpuwatch's hub counts them from DCGM_EXP_XID_ERRORS_COUNT\))$`)

// conditionRules makes a rule of each condition; every third clears on
// the next one.
func conditionRules(t *testing.T, conds []string) []*rules.Rule {
	t.Helper()
	rs := make([]*rules.Rule, len(conds))
	for i, c := range conds {
		when, err := rules.ParseCond(c)
		if err != nil {
			t.Fatal(err)
		}
		r := &rules.Rule{Name: fmt.Sprintf("C%03d", i), When: when, Severity: rules.SeverityWarning}
		r.For = time.Duration(i%3) * time.Minute
		if i%3 == 0 {
			r.ClearWhen, _ = rules.ParseCond(conds[(i+1)%len(conds)])
			r.HasClear = true
			r.KeepFiringFor = time.Minute
		}
		rs[i] = r
	}
	return rs
}

// TestEveryConditionExportsOrSaysWhy exports hundreds of conditions: each
// becomes an alert promtool accepts, or is left out with a reason.
func TestEveryConditionExportsOrSaysWhy(t *testing.T) {
	rs := conditionRules(t, conditionCorpus(t))
	for _, schema := range schemas {
		t.Run(string(schema), func(t *testing.T) {
			f, text := export(t, rs, promexport.Options{Schema: schema, Interval: 15 * time.Second, Source: "corpus"})
			exported := map[string]bool{}
			for _, r := range f.Rules {
				if r.Alert != "" {
					exported[r.Alert] = true
				}
			}
			for _, r := range rs {
				if exported[r.Name] {
					continue
				}
				found := false
				for _, n := range f.Notes {
					if n.Rule == r.Name && n.Kind == promexport.LeftOut {
						found = true
						if !leftOutWhy.MatchString(n.Why) {
							t.Errorf("%s (%s) is left out: %s", r.Name, r.When, n)
						}
					}
				}
				if !found {
					t.Errorf("%s (%s) is neither exported nor left out with a reason", r.Name, r.When)
				}
			}
			if len(exported) < len(rs)/2 {
				t.Errorf("only %d of %d rules exported", len(exported), len(rs))
			}
			dir := t.TempDir()
			writeFile(t, dir, "corpus.yml", text)
			if out, ok := promtool(t, dir, "check", "rules", "corpus.yml"); !ok {
				t.Fatalf("promtool check rules refuses the export:\n%s", out)
			}
		})
	}
}

// FuzzExportCondition: any condition the parser accepts exports, without
// a panic, to an alert whose PromQL promtool accepts, or is left out with
// a reason.
func FuzzExportCondition(f *testing.F) {
	for _, c := range []string{
		"memory.used_percent > 95 and held_for > 10m and min(memory.used_percent, 5m) < 90",
		"trend(memory.used, 40m) > 10MiB/min", "time_to_full(memory.used_percent, 30m) < 20m",
		"not (xid in (48, 79) or missing_for > 1m)", "avg(power.percent, 5m) != 90", "slope(memory.free, 1h) < -1GiB/h",
		"xid <= 13.5", "max(process.memory, 2m) >= 1GiB", "avg(temperature, 100ms) > 1",
	} {
		f.Add(c)
	}
	promtoolPath := "" // promtool checks each export in the fleet suite
	if suites.Asked(suites.FleetEnv) {
		promtoolPath, _ = exec.LookPath("promtool")
	}
	f.Fuzz(func(t *testing.T, cond string) {
		when, err := rules.ParseCond(cond)
		if err != nil {
			return
		}
		r := &rules.Rule{Name: "Fuzz", When: when, ClearWhen: when, Severity: rules.SeverityInfo}
		r.HasClear = true
		for _, schema := range schemas {
			f, text := export(t, []*rules.Rule{r}, promexport.Options{Schema: schema, Interval: 30 * time.Second, Source: "fuzz"})
			if len(f.LeftOut) == 1 {
				if len(f.Notes) == 0 || f.Notes[0].Why == "" {
					t.Fatalf("%q is left out without a reason", cond)
				}
				continue
			}
			if promtoolPath == "" {
				continue
			}
			dir := t.TempDir()
			writeFile(t, dir, "fuzz.yml", text)
			cmd := exec.Command(promtoolPath, "check", "rules", "fuzz.yml")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%q: promtool check rules refuses the export: %s\n%s", cond, out, bytes.TrimSpace(text))
			}
		}
	})
}

// TestLeftOutRulesLeaveNoRecordingRules: the recording rules made for a
// rule that is then left out are not in the file.
func TestLeftOutRulesLeaveNoRecordingRules(t *testing.T) {
	when, err := rules.ParseCond("avg(temperature, 5m) > 80 and process.memory > 1GiB")
	if err != nil {
		t.Fatal(err)
	}
	f, text := export(t, []*rules.Rule{{Name: "X", When: when, Severity: rules.SeverityInfo}},
		promexport.Options{Schema: promexport.SchemaDCGM, Interval: time.Minute, Source: "x"})
	if len(f.LeftOut) != 1 || strings.Contains(string(text), "record:") {
		t.Errorf("got left out %v and\n%s\nwant X left out and no recording rules", f.LeftOut, text)
	}
}
