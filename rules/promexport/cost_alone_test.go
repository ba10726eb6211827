package promexport_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// ruleGroup is a group of a rule file, as the harness reads it.
type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval"`
	Rules    []struct {
		Record string `yaml:"record"`
		Alert  string `yaml:"alert"`
		Expr   string `yaml:"expr"`
	} `yaml:"rules"`
}

// ruleGroups are the groups of a rule file.
func ruleGroups(t *testing.T, ruleFile []byte) []ruleGroup {
	var file struct {
		Groups []ruleGroup `yaml:"groups"`
	}
	if err := yaml.Unmarshal(ruleFile, &file); err != nil {
		t.Fatal(err)
	}
	return file.Groups
}

// measureAlone times each group on its own, once the engine's rule
// evaluations have stopped: its rules, one after the other, as instant
// queries of the engine at base (params added to each), over the series
// the evaluations before recorded. It is what a group costs with a core
// to itself, where the engine evaluates every group at once and on two
// cores they wait for each other. A query's answer is counted (count()),
// so that the time is the engine's, not that of writing and reading the
// answer; the engine does not write the records, a small part of an
// evaluation's time. The queries are of the time at, as the evaluations
// stopped, or shortly before: what the last ones recorded is current there
// however long the rounds take. Each round is 10 s before the one before,
// so that the rounds see the trends' slices at different points of their
// filling (a slice without a sample, which a scrape interval longer than
// the slice leaves now and then, computes less). It returns the report:
// each group's median over the rounds against its interval, the cores the
// groups take at their intervals, and the costliest rules.
func measureAlone(t *testing.T, base, params string, at time.Time, ruleFile []byte, intervals map[string]time.Duration, rounds int) string {
	t.Helper()
	groups := ruleGroups(t, ruleFile)
	slices.SortFunc(groups, func(a, b ruleGroup) int { return strings.Compare(a.Name, b.Name) })
	times, perRule := map[string][]float64{}, map[string][]float64{}
	for round := range rounds {
		at := at.Add(-time.Duration(round) * 10 * time.Second)
		for _, g := range groups {
			var sum float64
			for _, rule := range g.Rules {
				d := timeQuery(t, base, params, at, "count(("+rule.Expr+"))")
				perRule[rule.Record+rule.Alert] = append(perRule[rule.Record+rule.Alert], d)
				sum += d
			}
			times[g.Name] = append(times[g.Name], sum)
		}
	}
	var report strings.Builder
	var cores float64
	for _, g := range groups {
		name := g.Name
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
	form := url.Values{"query": {query}, "time": {queryTime(at)}}
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

// queryTime is at as the query API takes it: seconds, to the millisecond.
func queryTime(at time.Time) string {
	return strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)
}
