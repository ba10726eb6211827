package promexport_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// groupRule is a rule of a rule file: its record or alert name, and its
// expression.
type groupRule struct{ name, expr string }

// groupRules are each group's rules, in their order.
func groupRules(t *testing.T, ruleFile []byte) map[string][]groupRule {
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(ruleFile, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string][]groupRule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out[g.Name] = append(out[g.Name], groupRule{r.Record + r.Alert, r.Expr})
		}
	}
	return out
}

// measureAlone times each group on its own, once the engine's rule
// evaluations have stopped: its rules, one after the other, as instant
// queries of the engine at base (params added to each), over the series
// the evaluations before recorded. It is what a group costs with a core
// to itself, where the engine evaluates every group at once and on two
// cores they wait for each other. A query's answer is counted (count()),
// so that the time is the engine's, not that of writing and reading the
// answer; the engine does not write the records, a small part of an
// evaluation's time. Every query is at time at, as the evaluations
// stopped: what the last ones recorded is current there however long the
// rounds take. It returns the report: each group's median over the rounds
// against its interval, the cores the groups take at their intervals, and
// the costliest rules.
func measureAlone(t *testing.T, base, params string, at time.Time, ruleFile []byte, intervals map[string]time.Duration, rounds int) string {
	t.Helper()
	rules := groupRules(t, ruleFile)
	names := slices.Sorted(maps.Keys(rules))
	times, perRule := map[string][]float64{}, map[string][]float64{}
	for range rounds {
		for _, name := range names {
			var sum float64
			for _, rule := range rules[name] {
				d := timeQuery(t, base, params, at, "count(("+rule.expr+"))")
				perRule[rule.name] = append(perRule[rule.name], d)
				sum += d
			}
			times[name] = append(times[name], sum)
		}
	}
	var report strings.Builder
	var cores float64
	for _, name := range names {
		ds := times[name]
		slices.Sort(ds)
		median := ds[len(ds)/2]
		cores += median / intervals[name].Seconds()
		fmt.Fprintf(&report, "\n  %-40s every %-5v median %.3fs, max %.3fs (%.0f%% of its interval at the median)", name, intervals[name],
			median, ds[len(ds)-1], 100*median/intervals[name].Seconds())
	}
	fmt.Fprintf(&report, "\n  the groups at their intervals take %.2f cores (each group's median over its interval, summed)", cores)
	fmt.Fprintf(&report, "\n  the costliest rules (median): %s", costliest(perRule, 12))
	return report.String()
}

// timeQuery is the seconds the engine at base takes to answer query, an
// instant query at at; a failed query fails the test.
func timeQuery(t *testing.T, base, params string, at time.Time, query string) float64 {
	t.Helper()
	form := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	extra, _ := url.ParseQuery(params)
	for k, v := range extra {
		form[k] = v
	}
	began := time.Now()
	resp, err := http.PostForm(base+"/api/v1/query", form)
	if err != nil {
		t.Fatalf("query %.200s: %v", query, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Status != "success" {
		t.Fatalf("query %.200s: %s %v %s", query, resp.Status, err, answer.Error)
	}
	return time.Since(began).Seconds()
}
