package rules_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/rules"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

func TestExpandSeries(t *testing.T) {
	nan := math.NaN()
	bytes := rules.Dimension{Base: rules.Bytes}
	count := rules.Dimension{Base: rules.Count}
	tests := []struct {
		text string
		dim  rules.Dimension
		want []float64
	}{
		{"1+2x3", count, []float64{1, 3, 5, 7}},
		{"10GiB+512MiBx2", bytes, []float64{10 * gib, 10*gib + 512*mib, 11 * gib}},
		{"10GiB-1GiBx2", bytes, []float64{10 * gib, 9 * gib, 8 * gib}},
		{"_x3", count, []float64{nan, nan, nan}},
		{"_", count, []float64{nan}},
		{"5x2", count, []float64{5, 5, 5}},
		{"5x0", count, []float64{5}},
		{"1 _ 3", count, []float64{1, nan, 3}},
		{"  1\t2\n3 ", count, []float64{1, 2, 3}},
		{"-5x1", count, []float64{-5, -5}},
		{"-5+5x2", count, []float64{-5, 0, 5}},
		{"1.5 512KiB", bytes, []float64{1.5, 512 * kib}},
		{"85 90Cx1", rules.Dimension{Base: rules.Celsius}, []float64{85, 90, 90}},
		{"50%+25%x2", rules.Dimension{Base: rules.Percent}, []float64{50, 75, 100}},
	}
	for _, tt := range tests {
		got, err := rules.ExpandSeries(tt.text, tt.dim)
		if err != nil {
			t.Errorf("ExpandSeries(%q): got error %v, want %v", tt.text, err, tt.want)
			continue
		}
		if !slices.EqualFunc(got, tt.want, sameFloat) {
			t.Errorf("ExpandSeries(%q): got %v, want %v", tt.text, got, tt.want)
		}
	}
}

// sameFloat is == that also holds for two NaNs (missing samples).
func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestExpandSeriesErrors(t *testing.T) {
	bytes := rules.Dimension{Base: rules.Bytes}
	count := rules.Dimension{Base: rules.Count}
	tests := []struct {
		text string
		dim  rules.Dimension
		want string // a substring of the error
	}{
		{"1+x3", count, `"1+x3"`},
		{"5Cx2", bytes, `unit "C" does not fit`},
		{"x", count, "the count after x must be a whole number"},
		{"1x", count, "the count after x must be a whole number"},
		{"1x-2", count, "the count after x must be a whole number"},
		{"1x1.5", count, "the count after x must be a whole number"},
		{"1x2000000", count, "up to 1000000"},
		{"1x999999 1x999999", count, "more than 1,000,000 samples"},
		{"", count, "no values"},
		{"   ", count, "no values"},
		{"abc", count, `"abc" is not a number`},
		{"5GiB", rules.Dimension{Base: rules.Celsius}, `unit "GiB" does not fit`},
		{"5furlongs", bytes, `unit "furlongs" does not fit`},
		{"1..2", count, "not a number"},
	}
	for _, tt := range tests {
		got, err := rules.ExpandSeries(tt.text, tt.dim)
		if err == nil {
			t.Errorf("ExpandSeries(%q): got %v, want an error containing %q", tt.text, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ExpandSeries(%q): got error %q, want it to contain %q", tt.text, err, tt.want)
		}
	}
}

func TestRunTestFilePasses(t *testing.T) {
	const path = "testdata/ruletests/pass_test.yaml"
	results, err := rules.RunTestFile(path)
	if err != nil {
		t.Fatalf("RunTestFile(%s): got error %v, want none", path, err)
	}
	wantNames := []string{
		"hot after two minutes, cleared below 80",
		"near full on the second GPU only, with a custom memory total",
		"an xid keeps firing for three minutes",
	}
	if len(results) != len(wantNames) {
		t.Fatalf("RunTestFile(%s): got %d results, want %d", path, len(results), len(wantNames))
	}
	for i, r := range results {
		if r.File != path || r.Name != wantNames[i] {
			t.Errorf("RunTestFile(%s): result %d: got %s: %q, want %s: %q", path, i, r.File, r.Name, path, wantNames[i])
		}
		if len(r.Failures) > 0 {
			t.Errorf("RunTestFile(%s): %q: got failures %q, want none", path, r.Name, r.Failures)
		}
	}
}

func TestRunTestFileFailures(t *testing.T) {
	const path = "testdata/ruletests/fail_test.yaml"
	results, err := rules.RunTestFile(path)
	if err != nil {
		t.Fatalf("RunTestFile(%s): got error %v, want none (failures are results)", path, err)
	}
	if len(results) != 2 {
		t.Fatalf("RunTestFile(%s): got %d results, want 2", path, len(results))
	}
	want := []string{
		"at 1m0s: Hot on gpu 0: want firing, got pending (active since 0s)",
		"at 1m0s: NearFull on gpu 1: firing, but not expected (value 98.8%)",
		"at 3m0s: Hot on gpu 0: firing, but not expected (value 90 C)",
		"at 3m0s: Hot on gpu 1: want firing, got inactive",
		"at 3m0s: NearFull on gpu 1: firing, but not expected (value 98.8%)",
	}
	if got := results[0].Failures; !slices.Equal(got, want) {
		t.Errorf("RunTestFile(%s): %q: got failures\n%s\nwant\n%s", path, results[0].Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := results[1].Failures; len(got) != 0 {
		t.Errorf("RunTestFile(%s): %q: got failures %q, want none", path, results[1].Name, got)
	}
}

func TestRunTestFileProblems(t *testing.T) {
	const path = "testdata/ruletests/bad_test.yaml"
	results, err := rules.RunTestFile(path)
	if len(results) != 0 {
		t.Errorf("RunTestFile(%s): got %d results, want none (every test is broken)", path, len(results))
	}
	want := []struct {
		pos  string
		word string
	}{
		{"6:9", `input metric "temprature"`},
		{"11:17", `unit "C" does not fit`},
		{"12:9", "gpu must be an index"},
		{"24:9", "not a multiple of the interval"},
		{"26:9", `alert "Hott" is not a rule`},
		{"30:18", `alert "NearFul" is not a rule of the rule_files (did you mean "NearFull"?)`},
	}
	got := strictyaml.AsErrors(err)
	if len(got) != len(want) {
		t.Fatalf("RunTestFile(%s): got %d problems, want %d:\n%v", path, len(got), len(want), err)
	}
	for i, w := range want {
		msg := got[i].Error()
		if !strings.HasPrefix(msg, path+":"+w.pos+": ") || !strings.Contains(msg, w.word) {
			t.Errorf("RunTestFile(%s): problem %d: got %q, want %s:%s: …%s…", path, i, msg, path, w.pos, w.word)
		}
	}
}

func TestRunTestFileBrokenFiles(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string // a substring of the error
	}{
		{"empty", "", "empty"},
		{"not YAML", "tests: [", "invalid YAML"},
		{"unknown field", "rule_files: [rules.yaml]\ntests: []\nintervals: 1m\n", `"intervals"`},
		{"missing tests", "rule_files: [rules.yaml]\n", "tests"},
		{"missing rule file", "rule_files: [nope.yaml]\ntests: []\n", "nope.yaml"},
		{"rule file without rules", "rule_files: [empty.yaml]\ntests: []\n", "no rules: list"},
		{"broken rule", "rule_files: [broken.yaml]\ntests: []\n", "broken.yaml:3:24: when:"},
		{"duplicate rule", "rule_files: [rules.yaml, rules.yaml]\ntests: []\n", "defined twice"},
		{"far-off check", "rule_files: [rules.yaml]\ninterval: 1ms\ntests:\n  - name: x\n    input: [{metric: xid, values: '1'}]\n    expect: [{at: 1h, firing: []}]\n", "more than 1000000 samples"},
		{"negative at", "rule_files: [rules.yaml]\ntests:\n  - name: x\n    input: [{metric: xid, values: '1'}]\n    expect: [{at: -1m, firing: []}]\n", "negative"},
		{"huge gpu index", "rule_files: [rules.yaml]\ntests:\n  - name: x\n    input: [{gpu: 100000000, metric: xid, values: '1'}]\n    expect: [{at: 0m, firing: []}]\n", "gpu must be an index"},
	}
	dir := t.TempDir()
	rulesText, err := os.ReadFile("testdata/ruletests/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "rules.yaml"), string(rulesText))
	writeTestFile(t, filepath.Join(dir, "empty.yaml"), "source: {type: sim}\n")
	writeTestFile(t, filepath.Join(dir, "broken.yaml"), "rules:\n  - alert: X\n    when: temperature >\n")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+"_test.yaml")
			writeTestFile(t, path, tt.text)
			results, err := rules.RunTestFile(path)
			if err == nil {
				t.Fatalf("RunTestFile(%q): got %d results and no error, want an error containing %q", tt.text, len(results), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("RunTestFile(%q): got error %q, want it to contain %q", tt.text, err, tt.want)
			}
		})
	}
}

func writeTestFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzExpandSeries checks that no series text panics and that what comes
// out has the dimension's units applied consistently.
func FuzzExpandSeries(f *testing.F) {
	for _, s := range []string{"1+2x3", "10GiB+512MiBx2", "_x3", "5x2", "1 _ 3", "1+x3", "5Cx2", "x", "-5+5x2", "1e3", "+", "1x-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := rules.ExpandSeries(text, rules.Dimension{Base: rules.Bytes})
		if err != nil {
			if got != nil {
				t.Errorf("ExpandSeries(%q): got values %v with error %v, want none", text, got, err)
			}
			return
		}
		if len(got) == 0 || len(got) > 2_000_000 {
			t.Errorf("ExpandSeries(%q): got %d values, want 1 to 2,000,000", text, len(got))
		}
	})
}

// FuzzRunTestFile checks that no test file, however broken, panics.
func FuzzRunTestFile(f *testing.F) {
	for _, name := range []string{"pass_test.yaml", "fail_test.yaml", "bad_test.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata/ruletests", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	rulesText, err := os.ReadFile("testdata/ruletests/rules.yaml")
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	writeTestFile(f, filepath.Join(dir, "rules.yaml"), string(rulesText))
	writeTestFile(f, filepath.Join(dir, "config.yaml"), "rules:\n  - alert: Busy\n    when: utilization.gpu > 90\n")
	path := filepath.Join(dir, "fuzz_test.yaml")
	f.Fuzz(func(t *testing.T, text string) {
		writeTestFile(t, path, text)
		results, err := rules.RunTestFile(path)
		for _, p := range strictyaml.AsErrors(err) {
			if !strings.HasPrefix(p.Error(), path) {
				t.Errorf("RunTestFile: got problem %q, want it to start with the file name", p)
			}
		}
		for _, r := range results {
			if r.File != path {
				t.Errorf("RunTestFile: got result for %q, want %q", r.File, path)
			}
		}
	})
}
