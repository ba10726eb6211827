package rules

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// A rule test may feed its rules a GPU log rather than input series:
//
//	tests:
//	  - name: last night's leak on node3 is caught
//	    log: logs/node3.csv          # relative to the test file
//	    expect:
//	      - at: 2h                   # since the log's first sample
//	        firing:
//	          - {alert: GPUMemoryLeak, gpu: 3}
//
// A check at a time between two samples sees the alerts after the sample
// before it; a check after the log's last sample is a failure.

// parseLogTestCase checks a test case whose input is a log: the log opens
// and is a GPU log, and the checks name rules.
func parseLogTestCase(file string, tc *testYAML, rules []*Rule) (*TestCase, strictyaml.Errors) {
	out := &TestCase{Name: tc.Name, Log: tc.Log, Columns: tc.Columns}
	if !filepath.IsAbs(out.Log) {
		out.Log = filepath.Join(filepath.Dir(file), out.Log)
	}
	var errs strictyaml.Errors
	r, err := replay.Open(out.Log, replay.Options{Columns: tc.Columns})
	if err != nil {
		errs = append(errs, &strictyaml.Error{File: file, Pos: tc.Pos, Msg: fmt.Sprintf("log: %v", err)})
	} else {
		r.Close()
	}
	for _, ex := range tc.Expect {
		if bad := unknownAlerts(file, &ex, rules); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		if ex.At < 0 {
			errs = append(errs, &strictyaml.Error{File: file, Pos: ex.Pos, Msg: fmt.Sprintf("at %v is before the log's first sample", ex.At)})
			continue
		}
		check := TestCheck{At: ex.At, Alert: ex.Alert}
		for _, w := range ex.Firing {
			check.Firing = append(check.Firing, TestAlert{Alert: w.Alert, GPU: w.GPU})
		}
		out.Checks = append(out.Checks, check)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	slices.SortStableFunc(out.Checks, func(a, b TestCheck) int { return int(a.At - b.At) })
	return out, nil
}

// runLog replays the test's log through an engine of the rules and
// compares what fires with each check, after the last sample at or before
// the check's time.
func (tc *TestCase) runLog(file string, rules []*Rule) TestResult {
	res := TestResult{File: file, Name: tc.Name}
	r, err := replay.Open(tc.Log, replay.Options{Columns: tc.Columns})
	if err != nil {
		res.Failures = append(res.Failures, fmt.Sprintf("log: %v", err))
		return res
	}
	defer r.Close()
	engine := NewEngine(rules, Options{})
	checks := tc.Checks
	ctx := context.Background()
	seen := false
	var first, last = TestStart, TestStart
	for {
		s, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("log: %v", err))
			return res
		}
		if !seen {
			first, seen = s.Time, true
		}
		for len(checks) > 0 && first.Add(checks[0].At).Before(s.Time) {
			res.Failures = append(res.Failures, compareFiring(engine, &checks[0], first)...)
			checks = checks[1:]
		}
		engine.Eval(s)
		last = s.Time
	}
	for _, c := range checks {
		if !seen || first.Add(c.At).After(last) {
			res.Failures = append(res.Failures, fmt.Sprintf("at %v: the log ends %v after its first sample, before this check", c.At, last.Sub(first)))
			continue
		}
		res.Failures = append(res.Failures, compareFiring(engine, &c, first)...)
	}
	return res
}
