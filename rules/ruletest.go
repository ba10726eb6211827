package rules

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// A rule test file, run by `gpuwatch test`, feeds rules with input series
// and checks which alerts fire when, like `promtool test rules`:
//
//	rule_files: [rules.yaml]        # or a gpuwatch config: its rules: are used
//	interval: 1m                    # time between samples (default 1m)
//	tests:
//	  - name: a leak fires before the GPU is full
//	    input:
//	      - gpu: 0
//	        metric: memory.used
//	        values: "10GiB+1GiBx30"  # 10GiB, 11GiB, ... 40GiB
//	    expect:
//	      - at: 20m
//	        firing:
//	          - {alert: GPUMemoryLeak, gpu: 0}
//
// A test's input may be a GPU log instead, any log `gpuwatch replay` reads
// (log: node3.csv, with columns: for a log without its header); its checks
// are then at times since the log's first sample (see ruletest_log.go).
type testFileYAML struct {
	RuleFiles []string      `yaml:"rule_files,required"`
	Interval  time.Duration `yaml:"interval"`
	Tests     []testYAML    `yaml:"tests,required"`
}

type testYAML struct {
	Pos      strictyaml.Pos
	Name     string        `yaml:"name,required"`
	Interval time.Duration `yaml:"interval"`
	GPUs     []gpuYAML     `yaml:"gpus"`
	Input    []seriesYAML  `yaml:"input"`
	Log      string        `yaml:"log"`     // a GPU log to feed the rules instead of input
	Columns  string        `yaml:"columns"` // the columns of a log without its header
	Expect   []expectYAML  `yaml:"expect,required"`
}

// gpuYAML names a test GPU; by default GPU N is "NVIDIA H100 80GB HBM3",
// UUID GPU-test-N, with 80 GiB of memory.
type gpuYAML struct {
	Index int    `yaml:"index"`
	Name  string `yaml:"name"`
	UUID  string `yaml:"uuid"`
}

type seriesYAML struct {
	Pos    strictyaml.Pos
	GPU    int       `yaml:"gpu"`
	Metric string    `yaml:"metric,required"`
	Values yaml.Node `yaml:"values,required"`
}

type expectYAML struct {
	Pos    strictyaml.Pos
	At     time.Duration  `yaml:"at"`
	Alert  string         `yaml:"alert"` // only compare alerts of this rule
	Firing []expectedYAML `yaml:"firing"`
}

type expectedYAML struct {
	Pos   strictyaml.Pos
	Alert string `yaml:"alert,required"`
	GPU   int    `yaml:"gpu"`
}

// inputMetrics are the readings a test series may set, beside the health
// readings (inputMetric).
var inputMetrics = map[string]Dimension{
	"memory.used": {Base: Bytes}, "memory.total": {Base: Bytes}, "memory.reserved": {Base: Bytes}, "process.memory": {Base: Bytes},
	"utilization.gpu": {Base: Percent}, "utilization.memory": {Base: Percent},
	"temperature": {Base: Celsius}, "power": {Base: Watts}, "power.limit": {Base: Watts},
	"xid": {Base: Count},
}

// inputMetric returns the dimension of the values of a test series of
// the named reading: one of inputMetrics, or a health reading a GPU
// gives (ecc.uncorrected.volatile, throttle.hw_power_brake as 1 or 0,
// recovery_action by its number, clocks.sm in MHz or GHz, …).
func inputMetric(name string) (Dimension, bool) {
	if dim, ok := inputMetrics[name]; ok {
		return dim, true
	}
	if m, ok := lookupMetric(name); ok {
		if h, ok := healthMetricOf(m); ok && h.belowMax == 0 {
			return Dimension{Base: h.dim}, true
		}
	}
	return Dimension{}, false
}

// inputMetricNames lists the names inputMetric takes, sorted.
func inputMetricNames() []string {
	names := make([]string, 0, len(inputMetrics)+int(metricEnd))
	for n := range inputMetrics {
		names = append(names, n)
	}
	for _, m := range Metrics() {
		if _, ok := inputMetric(m.String()); ok && !slices.Contains(names, m.String()) {
			names = append(names, m.String())
		}
	}
	slices.Sort(names)
	return names
}

// TestResult is the outcome of one test case.
type TestResult struct {
	File     string
	Name     string
	Failures []string // empty when the test passed
}

// TestFile is a rule test file, read and checked: the rules it tests and
// its cases, ready to run.
type TestFile struct {
	Path  string
	Rules []*Rule
	Cases []*TestCase
}

// TestCase is one test of a rule test file: GPUs fed with input series,
// one sample every Interval, and checks of the alerts firing after some
// of the samples.
type TestCase struct {
	Name string
	// Log, when set, is the GPU log the test feeds the rules (Columns names
	// its columns when it has no header): the test has no Steps, and its
	// checks are at times since the log's first sample.
	Log, Columns string
	Interval     time.Duration
	// Steps is how many samples the test takes, the first at TestStart.
	Steps  int
	Checks []TestCheck
	gpus   []gpu.Device
	input  []inputSeries
}

// TestCheck says which alerts must be firing after the sample at At.
type TestCheck struct {
	At time.Duration // since the first sample; a multiple of the interval
	// Alert, when set, limits the check to that rule's alerts.
	Alert  string
	Firing []TestAlert
}

// TestAlert is an alert a check expects to be firing.
type TestAlert struct {
	Alert string
	GPU   int
}

// TestStart is when every rule test's first sample is taken.
var TestStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Snapshot returns the test's sample i (0 ≤ i < Steps), at TestStart + i
// × Interval: readings not given are unknown, memory.total defaults to
// 80 GiB, and a GPU whose every reading is missing ("_") there is left out,
// as a GPU that stopped reporting is.
func (tc *TestCase) Snapshot(i int) *gpu.Snapshot {
	return testSnapshot(TestStart.Add(time.Duration(i)*tc.Interval), tc.gpus, tc.input, i)
}

// ReadTestFile reads and checks a rule test file. Alongside an error that
// lists the problems of some test cases, it returns the file with the
// cases that have none; a file that cannot be read, or whose rules do not
// load, gives a nil file.
func ReadTestFile(path string) (*TestFile, error) {
	root, err := strictyaml.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f testFileYAML
	if errs := strictyaml.Decode(path, root, &f); len(errs) > 0 {
		return nil, errs
	}
	rules, err := loadTestRules(path, f.RuleFiles)
	if err != nil {
		return nil, err
	}
	out := &TestFile{Path: path, Rules: rules}
	var errs strictyaml.Errors
	for i := range f.Tests {
		tc, terrs := parseTestCase(path, &f.Tests[i], rules, cmpOr(f.Tests[i].Interval, f.Interval, time.Minute))
		errs = append(errs, terrs...)
		if len(terrs) == 0 {
			out.Cases = append(out.Cases, tc)
		}
	}
	return out, errs.Err()
}

// RunTestFile runs the rule tests of one file. The error reports a file
// that cannot be run (bad YAML, rules that do not load) or test cases with
// problems; test failures are in the results.
func RunTestFile(path string) ([]TestResult, error) {
	f, err := ReadTestFile(path)
	if f == nil {
		return nil, err
	}
	results := make([]TestResult, 0, len(f.Cases))
	for _, tc := range f.Cases {
		results = append(results, tc.run(path, f.Rules))
	}
	return results, err
}

func cmpOr(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// loadTestRules reads the `rules:` list of each file, which may be a rule
// file or a gpuwatch config.
func loadTestRules(testFile string, files []string) ([]*Rule, error) {
	var all []*Rule
	var errs strictyaml.Errors
	for _, name := range files {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(testFile), p)
		}
		root, err := strictyaml.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: rule_files: %w", testFile, err)
		}
		list := mappingValue(root, "rules")
		if list == nil {
			errs = append(errs, strictyaml.Errorf(p, root, "no rules: list in this file"))
			continue
		}
		rs, rerrs := ParseList(p, list)
		all = append(all, rs...)
		errs = append(errs, rerrs...)
	}
	errs = append(errs, CheckUnique(all)...)
	return all, errs.Err()
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	n = strictyaml.Resolve(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

type inputSeries struct {
	gpu    int
	metric string
	values []float64 // NaN: missing
}

func parseInputs(file string, in []seriesYAML) ([]inputSeries, strictyaml.Errors) {
	var out []inputSeries
	var errs strictyaml.Errors
	for _, s := range in {
		dim, ok := inputMetric(s.Metric)
		if !ok {
			names := inputMetricNames()
			errs = append(errs, &strictyaml.Error{File: file, Pos: s.Pos, Msg: fmt.Sprintf(
				"input metric %q is not one of %s%s", s.Metric, strings.Join(names, ", "), strictyaml.Suggest(s.Metric, names))})
			continue
		}
		values, err := ExpandSeries(s.Values.Value, dim)
		if err != nil {
			errs = append(errs, strictyaml.Errorf(file, &s.Values, "values: %v", err))
			continue
		}
		if s.GPU < 0 || s.GPU >= maxTestGPUs {
			errs = append(errs, &strictyaml.Error{File: file, Pos: s.Pos, Msg: fmt.Sprintf("gpu must be an index from 0 to %d", maxTestGPUs-1)})
			continue
		}
		out = append(out, inputSeries{gpu: s.GPU, metric: s.Metric, values: values})
	}
	return out, errs
}

// ExpandSeries expands the compact series notation of rule tests into
// values: space-separated items, each a value ("5GiB", "85"), "_" for a
// missing sample, "a+bxN" or "a-bxN" for a, a±b, …, a±N·b, "axN" for a
// repeated N+1 times, "_xN" for N missing samples. Units must fit dim.
func ExpandSeries(text string, dim Dimension) ([]float64, error) {
	var out []float64
	for _, item := range strings.Fields(text) {
		vals, err := expandItem(item, dim)
		if err != nil {
			return nil, err
		}
		out = append(out, vals...)
		if len(out) > 1_000_000 {
			return nil, fmt.Errorf("more than 1,000,000 samples: write a shorter series")
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no values: write them like \"10GiB+1GiBx30\" or \"85 86 _ 88\"")
	}
	return out, nil
}

func expandItem(item string, dim Dimension) ([]float64, error) {
	head, count, repeated := strings.Cut(item, "x")
	n := 0
	if repeated {
		var err error
		if n, err = strconv.Atoi(count); err != nil || n < 0 || n > 1_000_000 {
			return nil, fmt.Errorf("%q: the count after x must be a whole number up to 1000000", item)
		}
	}
	if head == "_" {
		return slices.Repeat([]float64{math.NaN()}, max(n, 1)), nil
	}
	start, step := head, "0"
	if i := strings.LastIndexAny(head, "+-"); i > 0 && repeated {
		start, step = head[:i], head[i:]
	}
	a, err := parseSeriesQuantity(start, dim)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", item, err)
	}
	b, err := parseSeriesQuantity(strings.TrimPrefix(step, "+"), dim)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", item, err)
	}
	out := make([]float64, n+1)
	for i := range out {
		out[i] = a + float64(i)*b
	}
	return out, nil
}

// parseSeriesQuantity parses "5GiB", "-512MiB", "85" in dim's base unit.
func parseSeriesQuantity(s string, dim Dimension) (float64, error) {
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || (end == 0 && (s[end] == '-' || s[end] == '+'))) {
		end++
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if end == len(s) {
		return v, nil
	}
	u, ok := lookupUnit(s[end:])
	if !ok || u.dim != dim {
		return 0, fmt.Errorf("unit %q does not fit a value in %s", s[end:], dim)
	}
	return v * u.factor, nil
}

// Limits that keep a mistaken test file from running for hours or filling
// memory.
const (
	maxTestGPUs  = 256
	maxTestSteps = 1_000_000
)

// parseTestCase checks one test case and prepares it to run.
func parseTestCase(file string, tc *testYAML, rules []*Rule, interval time.Duration) (*TestCase, strictyaml.Errors) {
	switch {
	case tc.Log != "" && len(tc.Input) > 0:
		return nil, strictyaml.Errors{&strictyaml.Error{File: file, Pos: tc.Pos, Msg: "a test has input series or a log, not both"}}
	case tc.Log != "":
		return parseLogTestCase(file, tc, rules)
	case len(tc.Input) == 0:
		return nil, strictyaml.Errors{&strictyaml.Error{File: file, Pos: tc.Pos, Msg: "a test needs input: series (input:) or a GPU log (log: FILE)"}}
	}
	input, errs := parseInputs(file, tc.Input)
	if len(errs) > 0 {
		return nil, errs
	}
	out := &TestCase{Name: tc.Name, Interval: interval, input: input}
	for _, s := range input {
		out.Steps = max(out.Steps, len(s.values))
	}
	for _, ex := range tc.Expect {
		if bad := unknownAlerts(file, &ex, rules); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		if ex.At%interval != 0 {
			errs = append(errs, &strictyaml.Error{File: file, Pos: ex.Pos, Msg: fmt.Sprintf(
				"at %v is not a multiple of the interval %v: checks happen at sample times", ex.At, interval)})
			continue
		}
		i := int(ex.At / interval)
		if i > maxTestSteps {
			errs = append(errs, &strictyaml.Error{File: file, Pos: ex.Pos, Msg: fmt.Sprintf(
				"at %v is more than %d samples of %v in: test a shorter time or use a longer interval", ex.At, maxTestSteps, interval)})
			continue
		}
		check := TestCheck{At: ex.At, Alert: ex.Alert}
		for _, w := range ex.Firing {
			check.Firing = append(check.Firing, TestAlert{Alert: w.Alert, GPU: w.GPU})
		}
		out.Checks = append(out.Checks, check)
		out.Steps = max(out.Steps, i+1)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out.gpus = testGPUs(tc, input)
	if work := out.Steps * len(out.gpus); work > maxTestSteps {
		return nil, strictyaml.Errors{&strictyaml.Error{File: file, Pos: tc.Pos, Msg: fmt.Sprintf(
			"%d samples of %d GPUs is more than %d readings: test a shorter time or fewer GPUs", out.Steps, len(out.gpus), maxTestSteps)}}
	}
	return out, nil
}

// run feeds the test's samples to an engine of the rules and compares
// what fires with the checks.
func (tc *TestCase) run(file string, rules []*Rule) TestResult {
	if tc.Log != "" {
		return tc.runLog(file, rules)
	}
	res := TestResult{File: file, Name: tc.Name}
	checks := map[int][]TestCheck{}
	for _, c := range tc.Checks {
		i := int(c.At / tc.Interval)
		checks[i] = append(checks[i], c)
	}
	engine := NewEngine(rules, Options{})
	for i := range tc.Steps {
		engine.Eval(tc.Snapshot(i))
		for _, c := range checks[i] {
			res.Failures = append(res.Failures, compareFiring(engine, &c, TestStart)...)
		}
	}
	return res
}

// unknownAlerts reports the alert names of an expectation that no rule
// has: a misspelt name would otherwise pass any `firing: []` check.
func unknownAlerts(file string, ex *expectYAML, rules []*Rule) strictyaml.Errors {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	var errs strictyaml.Errors
	check := func(pos strictyaml.Pos, name string) {
		if !slices.Contains(names, name) {
			errs = append(errs, &strictyaml.Error{File: file, Pos: pos, Msg: fmt.Sprintf(
				"alert %q is not a rule of the rule_files%s", name, strictyaml.Suggest(name, names))})
		}
	}
	if ex.Alert != "" {
		check(ex.Pos, ex.Alert)
	}
	for _, w := range ex.Firing {
		check(w.Pos, w.Alert)
	}
	return errs
}

func testGPUs(tc *testYAML, input []inputSeries) []gpu.Device {
	n := 0
	for _, s := range input {
		n = max(n, s.gpu+1)
	}
	devs := make([]gpu.Device, n)
	for i := range devs {
		devs[i] = gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-test-%d", i), Name: "NVIDIA H100 80GB HBM3"}
	}
	for _, g := range tc.GPUs {
		if g.Index >= 0 && g.Index < n {
			if g.Name != "" {
				devs[g.Index].Name = g.Name
			}
			if g.UUID != "" {
				devs[g.Index].UUID = g.UUID
			}
		}
	}
	return devs
}

// testSnapshot builds the snapshot of sample i: readings not given are
// unknown, memory.total defaults to 80 GiB. A GPU whose every reading at
// sample i is missing ("_") is left out of it, as a GPU that stopped
// reporting is; series that have ended, and xid series ("_" there means no
// event), do not count.
func testSnapshot(at time.Time, gpus []gpu.Device, input []inputSeries, i int) *gpu.Snapshot {
	s := &gpu.Snapshot{Time: at, Host: "test", Devices: make([]gpu.Device, len(gpus))}
	nan := math.NaN()
	for j, g := range gpus {
		s.Devices[j] = gpu.Device{Index: g.Index, UUID: g.UUID, Name: g.Name, MemTotal: 80 << 30,
			UtilGPU: nan, UtilMem: nan, TempC: nan, PowerW: nan, PowerLimitW: nan}
	}
	memUnknown := make([]bool, len(gpus))
	for _, ser := range input {
		d := &s.Devices[ser.gpu]
		v := nan
		if i < len(ser.values) {
			v = ser.values[i]
		}
		switch ser.metric {
		case "memory.used":
			d.MemUsed = uint64(max(v, 0))
			memUnknown[ser.gpu] = memUnknown[ser.gpu] || math.IsNaN(v)
		case "memory.total":
			d.MemTotal = uint64(max(v, 0))
			memUnknown[ser.gpu] = memUnknown[ser.gpu] || math.IsNaN(v)
		case "memory.reserved":
			if !math.IsNaN(v) {
				d.MemReserved = uint64(max(v, 0))
			}
		case "process.memory":
			if !math.IsNaN(v) {
				d.Processes = []gpu.Process{{PID: 1000 + ser.gpu, User: "test", Command: "test", MemUsed: uint64(max(v, 0))}}
			}
		case "utilization.gpu":
			d.UtilGPU = v
		case "utilization.memory":
			d.UtilMem = v
		case "temperature":
			d.TempC = v
		case "power":
			d.PowerW = v
		case "power.limit":
			d.PowerLimitW = v
		case "xid":
			if !math.IsNaN(v) {
				s.Events = append(s.Events, gpu.Event{Time: at, Kind: gpu.EventXID, GPU: d.Index, UUID: d.UUID, XID: uint64(v)})
			}
		default:
			if m, ok := lookupMetric(ser.metric); ok {
				if h, ok := healthMetricOf(m); ok {
					h.set(&d.Health, v)
				}
			}
		}
	}
	for j, unknown := range memUnknown {
		if unknown {
			s.Devices[j].MemTotal, s.Devices[j].MemUsed = 0, 0
		}
	}
	s.Devices = slices.DeleteFunc(s.Devices, func(d gpu.Device) bool { return notReporting(input, d.Index, i) })
	return s
}

// notReporting reports whether the reading series of GPU g that reach
// sample i (at least one does) all have "_" there.
func notReporting(input []inputSeries, g, i int) bool {
	readings := 0
	for _, ser := range input {
		if ser.gpu != g || ser.metric == "xid" || i >= len(ser.values) {
			continue
		}
		readings++
		if !math.IsNaN(ser.values[i]) {
			return false
		}
	}
	return readings > 0
}

// compareFiring compares the alerts firing with a check's; times are said
// since start.
func compareFiring(e *Engine, ex *TestCheck, start time.Time) []string {
	type key struct {
		alert string
		gpu   int
	}
	got := map[key]AlertState{}
	for _, a := range e.Active() {
		if ex.Alert == "" || a.Rule.Name == ex.Alert {
			got[key{a.Rule.Name, a.GPU}] = a
		}
	}
	var fails []string
	want := map[key]bool{}
	for _, w := range ex.Firing {
		k := key{w.Alert, w.GPU}
		want[k] = true
		a, ok := got[k]
		switch {
		case !ok:
			fails = append(fails, fmt.Sprintf("at %v: %s on gpu %d: want firing, got inactive", ex.At, w.Alert, w.GPU))
		case a.State != StateFiring:
			fails = append(fails, fmt.Sprintf("at %v: %s on gpu %d: want firing, got %s (active since %v)",
				ex.At, w.Alert, w.GPU, a.State, a.ActiveAt.Sub(start)))
		}
	}
	for k, a := range got {
		if a.State == StateFiring && !want[k] {
			fails = append(fails, fmt.Sprintf("at %v: %s on gpu %d: firing, but not expected (value %s)",
				ex.At, k.alert, k.gpu, a.Rule.ValueText(&a.Alert)))
		}
	}
	slices.Sort(fails)
	return fails
}
