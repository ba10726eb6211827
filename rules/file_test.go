package rules

import (
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// fieldList is the list of rule fields unknown-field errors print.
const fieldList = "valid fields: alert, when, for, keep_firing_for, clear_when, severity, labels, summary, description, gpus, receivers, repeat_interval"

// ruleFileFailures maps each testdata/*.bad.yaml file to the exact lines
// `gpuwatch check` prints for it, in order.
var ruleFileFailures = map[string][]string{
	"syntax.bad.yaml": {
		"2:1: invalid YAML: did not find expected '-' indicator (at or below this line; check the indentation)",
	},
	"empty.bad.yaml": {
		"1:1: the file is empty",
	},
	"unknown_field.bad.yaml": {
		`4:5: unknown field "sumary" in rules[0] (did you mean "summary"?); ` + fieldList,
		`5:5: unknown field "frequency" in rules[0]; ` + fieldList,
	},
	"unknown_top_field.bad.yaml": {
		`1:1: unknown field "groups" in the file; valid fields: rules`,
		`1:1: the file needs the field "rules"`,
		`3:1: unknown field "rule" in the file (did you mean "rules"?); valid fields: rules`,
	},
	"missing_alert.bad.yaml": {
		`2:5: rules[0] needs the field "alert"`,
	},
	"missing_when.bad.yaml": {
		`2:5: rules[0] needs the field "when"`,
	},
	"empty_when.bad.yaml": {
		"3:11: when must be a condition such as `memory.used_percent > 95`",
		"5:10: when must be a condition such as `memory.used_percent > 95`",
		"8:17: clear_when must be a condition such as `memory.used_percent > 95`",
		"10:11: when must be a condition such as `memory.used_percent > 95`",
	},
	// The column inside the expression maps to the file: plain, double- and
	// single-quoted scalars; a block scalar points at its start.
	"cond_syntax.bad.yaml": {
		`3:32: when: expected a number after ">", found ">"`,
		`5:33: when: expected a metric, function, "not" or "(", found "and"`,
		`7:36: when: expected a condition after "or"`,
		`9:11: when: unexpected character "+"`,
	},
	"unit_mismatch.bad.yaml": {
		`3:26: when: unit "C" is a temperature but memory.used is bytes; use B, KiB, MiB, GiB, TiB`,
		`5:40: when: unit "MiB" is a size but slope(memory.used, 10m) is bytes per second; use a rate such as MiB/s, MiB/min or GiB/h`,
	},
	"unknown_metric.bad.yaml": {
		`3:11: when: unknown metric "memory.usd" (did you mean "memory.used"?); metrics are memory.used, memory.free, memory.total, memory.used_percent, memory.held, utilization.gpu, utilization.memory, temperature, power, power.percent, process.memory, process.count, process.jobs, oom_exits, xid, held_for, missing_for, xid.fault, xid.action and the health readings ecc.*, retired_pages.*, row_remap.*, recovery_action, throttle.*, pcie.*, nvlink.*, fan.*, clocks.* (docs/rules.md lists them)`,
		`5:11: when: unknown function "mean" (did you mean "min"?); functions are avg, min, max, slope, time_to_full, trend, rate, active, count`,
	},
	"bad_duration.bad.yaml": {
		`4:10: rules[0].for: "5 minutes" is not a duration: write it like 30s, 5m, 1h30m or 2d`,
		`7:22: rules[1].keep_firing_for: "5" is not a duration: write it like 30s, 5m, 1h30m or 2d`,
		`10:10: rules[2].for: "-1m" is negative: durations must be 0 or more`,
		`13:22: rules[3].repeat_interval: "-2d" is negative: durations must be 0 or more`,
	},
	"bad_severity.bad.yaml": {
		`4:15: severity "urgent" is not one of info, warning, critical`,
		`7:15: severity "Critical" is not one of info, warning, critical (did you mean "critical"?)`,
	},
	"bad_labels.bad.yaml": {
		`6:7: label "severity" is set by gpuwatch itself; use the rule's own fields (alert, severity) or another label name`,
		`7:7: label "alertname" is set by gpuwatch itself; use the rule's own fields (alert, severity) or another label name`,
		`8:7: label name "team-name" must be letters, digits and '_', not starting with a digit`,
		`9:7: label name "9lives" must be letters, digits and '_', not starting with a digit`,
	},
	"template_parse.bad.yaml": {
		`4:14: summary: function "is" not defined; the helpers are bytes, percent, duration and xid`,
		`7:14: summary: unclosed action`,
		`10:18: description: function "celsius" not defined; the helpers are bytes, percent, duration and xid`,
		`13:14: summary: {{range 1000000000}} does not range over the alert's data; range over .Processes or .Labels`,
	},
	"template_field.bad.yaml": {
		`4:14: summary: there is no field .Valu (did you mean "Value"?); the fields are .Alert .GPU .UUID .Name .Label .MIG .Host .Value .ValueText .Severity .Labels .Processes .StartsAt .TrueFor .TimeToFull .Process`,
		`7:18: description: there is no field .Usr (did you mean "User"?); the fields are .PID .User .Command .Container .Job .Account .PodLabels .MemUsed`,
		`10:18: description must be text (a Go template like "GPU {{.GPU}} at {{.Value | percent}}")`,
	},
	"bad_gpus.bad.yaml": {
		`4:15: GPU name glob "NVIDIA [A100" is malformed: syntax error in pattern`,
		`4:31: GPU index -1 must be 0 or more`,
		`4:35: gpus entries must be an index (0), a UUID (GPU-…, MIG-…), a name glob ("NVIDIA A100*") or MIG instances by profile ("*/1g.10gb", "0/*")`,
		`7:12: MIG selector "node1/1g.10gb": the parent "node1" must be *, an index (0) or a GPU UUID (GPU-…)`,
		`7:29: MIG selector "*/" must be PARENT/PROFILE, the parent *, an index or a GPU UUID and the profile a glob: "*/1g.10gb", "0/*"`,
		`7:35: MIG profile glob "[1g" is malformed: syntax error in pattern`,
	},
	"duplicate_name.bad.yaml": {
		`6:5: alert "GPUHot" is defined twice (first at testdata/duplicate_name.bad.yaml:2:5); give each rule its own name`,
	},
	"duplicate_key.bad.yaml": {
		`5:5: field "for" appears twice in rules[0]`,
		`8:7: rules[0].labels: key "team" appears twice`,
	},
	"not_a_list.bad.yaml": {
		"2:3: rules must be a list of rules, each starting with `- alert: Name`",
	},
	"bad_alert_name.bad.yaml": {
		`2:12: alert name "GPU Hot" must start with a letter and hold only letters, digits, '_', '.' or '-' (like GPUMemoryNearFull)`,
		`4:12: alert name "9Lives" must start with a letter and hold only letters, digits, '_', '.' or '-' (like GPUMemoryNearFull)`,
		`6:12: alert must be the rule's name (like GPUMemoryNearFull), not a list`,
	},
	"wrong_type.bad.yaml": {
		`4:10: rules[0].for must be a duration, not a list`,
		`5:13: rules[0].labels must be a mapping of names to values, not a list`,
		`6:16: rules[0].receivers must be a list, not "ops"`,
		`7:11: rules[0].gpus must be a list, not "all"`,
	},
	// One file, several problems: all reported at once, in file order.
	"many.bad.yaml": {
		`4:26: when: unit "C" is a temperature but memory.used is bytes; use B, KiB, MiB, GiB, TiB`,
		`5:15: severity "high" is not one of info, warning, critical`,
		`6:5: rules[1] needs the field "when"`,
		`7:5: unknown field "wen" in rules[1] (did you mean "when"?); ` + fieldList,
		`10:10: rules[2].for: "soon" is not a duration: write it like 30s, 5m, 1h30m or 2d`,
		`14:1: unknown field "extra" in the file; valid fields: rules`,
	},
}

func TestParseFileFailure(t *testing.T) {
	for name, want := range ruleFileFailures {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			want := slices.Clone(want) // the table is shared by every run (-count)
			for i := range want {
				want[i] = path + ":" + want[i]
			}
			_, err := LoadFile(path)
			if err == nil {
				t.Fatalf("LoadFile(%s): got no error, want %d", path, len(want))
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, want) {
				t.Errorf("LoadFile(%s): got errors\n%s\nwant\n%s", path, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, e := range strictyaml.AsErrors(err) {
				var pe *strictyaml.Error
				if !errors.As(e, &pe) || pe.Line < 1 || pe.Col < 1 {
					t.Errorf("error %q: got no position, want a *strictyaml.Error at line and column ≥ 1", e)
				}
			}
		})
	}
}

// TestEveryBadFileIsChecked keeps the table and testdata in step: a bad file
// without expected errors would test nothing.
func TestEveryBadFileIsChecked(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(ruleFileFailures) {
		t.Errorf("got %d testdata/*.bad.yaml files, want %d (one per table entry)", len(files), len(ruleFileFailures))
	}
	for _, f := range files {
		if _, ok := ruleFileFailures[filepath.Base(f)]; !ok {
			t.Errorf("%s: got no entry in ruleFileFailures, want one", f)
		}
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile("testdata/no-such-file.yaml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile(missing): got %v, want an error wrapping fs.ErrNotExist", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "read rule file: ") {
		t.Errorf("LoadFile(missing): got %q, want it to start with \"read rule file: \"", err)
	}
}

func loadGood(t *testing.T, name string) []*Rule {
	t.Helper()
	rs, err := LoadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("LoadFile(%s): %v", name, err)
	}
	return rs
}

func TestParseFileAllFields(t *testing.T) {
	rs := loadGood(t, "good.yaml")
	if len(rs) != 3 {
		t.Fatalf("got %d rules, want 3", len(rs))
	}
	full, hot, xid := rs[0], rs[1], rs[2]

	if full.Name != "GPUMemoryNearFull" || full.When.String() != "memory.used_percent > 95" {
		t.Errorf("rule 0: got %q when %q, want GPUMemoryNearFull when memory.used_percent > 95", full.Name, full.When)
	}
	if full.For != 30*time.Second || full.Severity != SeverityCritical || full.RepeatInterval != 2*time.Hour {
		t.Errorf("rule 0: got for %v severity %s repeat %v, want 30s critical 2h", full.For, full.Severity, full.RepeatInterval)
	}
	if want := map[string]string{"team": "ml", "room": "b12"}; !mapsEqual(full.Labels, want) {
		t.Errorf("rule 0 labels: got %v, want %v", full.Labels, want)
	}
	if want := []string{"ops", "team-slack"}; !slices.Equal(full.Receivers, want) {
		t.Errorf("rule 0 receivers: got %v, want %v", full.Receivers, want)
	}
	wantGPUs := []GPUSelector{
		{Index: 0}, {Index: 3},
		{Index: -1, UUID: "GPU-8a3b6c1e-0000-4000-8000-000000000001"},
		{Index: -1, NameGlob: "NVIDIA A100*"},
	}
	if !slices.Equal(full.GPUs, wantGPUs) {
		t.Errorf("rule 0 gpus: got %+v, want %+v", full.GPUs, wantGPUs)
	}
	if full.File != "testdata/good.yaml" || full.Pos != (strictyaml.Pos{Line: 3, Col: 5}) {
		t.Errorf("rule 0 position: got %s:%d:%d, want testdata/good.yaml:3:5", full.File, full.Pos.Line, full.Pos.Col)
	}
	if full.ClearWhen != nil || full.HasClear || full.KeepFiringFor != 0 {
		t.Errorf("rule 0: got clear_when %v (HasClear %v) keep_firing_for %v, want none", full.ClearWhen, full.HasClear, full.KeepFiringFor)
	}

	if hot.ClearWhen == nil || hot.ClearWhen.String() != "temperature < 80" || !hot.HasClear {
		t.Errorf("rule 1 clear_when: got %v (HasClear %v), want temperature < 80", hot.ClearWhen, hot.HasClear)
	}
	if hot.For != time.Minute || hot.KeepFiringFor != 10*time.Minute {
		t.Errorf("rule 1: got for %v keep_firing_for %v, want 1m 10m", hot.For, hot.KeepFiringFor)
	}
	if hot.Severity != SeverityWarning || hot.Summary != nil || hot.Description != nil || hot.GPUs != nil {
		t.Errorf("rule 1 defaults: got severity %s summary %v description %v gpus %v, want warning and none",
			hot.Severity, hot.Summary, hot.Description, hot.GPUs)
	}

	if xid.When.String() != "xid in (48, 63, 79)" || xid.KeepFiringFor != 24*time.Hour || xid.Severity != SeverityInfo {
		t.Errorf("rule 2: got when %q keep_firing_for %v severity %s, want xid in (48, 63, 79) 24h info", xid.When, xid.KeepFiringFor, xid.Severity)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestTemplatesRender(t *testing.T) {
	rs := loadGood(t, "good.yaml")
	data := &TemplateData{
		Alert: "GPUMemoryNearFull", GPU: 2, UUID: "GPU-1234", Name: "NVIDIA H100 80GB HBM3", Host: "gpu-1",
		Value: 97.34, ValueText: "97.3%", Severity: "critical",
		Processes: []gpu.Process{{PID: 7, User: "alice", MemUsed: 3 << 30}, {PID: 8, User: "bob", MemUsed: 512 << 20}},
		StartsAt:  time.Date(2026, 11, 29, 9, 5, 0, 0, time.UTC),
	}
	tests := []struct {
		name string
		tmpl *template.Template
		data *TemplateData
		want string
	}{
		{"summary", rs[0].Summary, data, "GPU 2 memory at 97.3% on gpu-1"},
		{"description", rs[0].Description, data,
			"NVIDIA H100 80GB HBM3 (GPU-1234) holds 97.3%; top process alice:3 GiB bob:512 MiB since 09:05\n"},
		{"duration helper", rs[2].Summary, &TemplateData{Alert: "GPUXidError", Value: 79}, "XID 79 for GPUXidError after 1m19s"},
		{"no template", rs[1].Summary, data, ""},
	}
	for _, tt := range tests {
		if got := render(tt.tmpl, tt.data); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTemplateHelpers(t *testing.T) {
	tests := []struct {
		text string
		data TemplateData
		want string
	}{
		{"{{.Value | bytes}}", TemplateData{Value: 19.5 * (1 << 30)}, "19.5 GiB"},
		{"{{.Value | percent}}", TemplateData{Value: 97.34}, "97.3%"},
		{"{{.Value | duration}}", TemplateData{Value: 1390}, "23m10s"},
		{"{{.Labels.team}}", TemplateData{Labels: map[string]string{"team": "ml"}}, "ml"},
		{"[{{.Labels.absent}}]", TemplateData{Labels: map[string]string{}}, "[]"},
		{"{{.Value | bytes}}", TemplateData{Value: math.NaN()}, "n/a"},
	}
	for _, tt := range tests {
		tmpl, err := parseTemplate("summary", tt.text)
		if err != nil {
			t.Errorf("parseTemplate(%q): %v", tt.text, err)
			continue
		}
		if got := render(tmpl, &tt.data); got != tt.want {
			t.Errorf("render(%q): got %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestAppliesTo(t *testing.T) {
	rs := loadGood(t, "good.yaml")
	full, hot := rs[0], rs[1]
	tests := []struct {
		index      int
		uuid, name string
		want       bool
	}{
		{0, "GPU-aaaa", "NVIDIA H100", true},                              // by index
		{3, "GPU-bbbb", "Tesla T4", true},                                 // by index
		{1, "GPU-cccc", "Tesla T4", false},                                // nothing matches
		{5, "gpu-8a3b6c1e-0000-4000-8000-000000000001", "Tesla T4", true}, // UUID, any case
		{6, "GPU-dddd", "NVIDIA A100-SXM4-80GB", true},                    // name glob
		{7, "GPU-eeee", "NVIDIA H100 80GB HBM3", false},
	}
	for _, tt := range tests {
		d := &gpu.Device{Index: tt.index, UUID: tt.uuid, Name: tt.name}
		if got := full.AppliesTo(d); got != tt.want {
			t.Errorf("AppliesTo(%d, %q, %q): got %v, want %v", tt.index, tt.uuid, tt.name, got, tt.want)
		}
		if !hot.AppliesTo(d) {
			t.Errorf("rule without gpus: AppliesTo(%d, %q, %q): got false, want true", tt.index, tt.uuid, tt.name)
		}
	}
}

func TestParseFileAnchors(t *testing.T) {
	rs := loadGood(t, "anchors.yaml")
	if len(rs) != 2 {
		t.Fatalf("got %d rules, want 2", len(rs))
	}
	for _, r := range rs {
		if r.When.String() != "temperature > 85" || r.Labels["team"] != "ml" || !slices.Equal(r.GPUs, []GPUSelector{{Index: 0}}) {
			t.Errorf("%s: got when %q labels %v gpus %+v, want the anchored values", r.Name, r.When, r.Labels, r.GPUs)
		}
	}
}

// TestEmptyOptionalFieldsTakeDefaults: an optional field left out or left
// empty (`severity:` with nothing after it) takes its default.
func TestEmptyOptionalFieldsTakeDefaults(t *testing.T) {
	text := `rules:
  - alert: Omitted
    when: temperature > 1
  - alert: Empty
    when: temperature > 1
    severity:
    summary:
    description: ~
    clear_when:
    for:
    labels:
    gpus:
    receivers:
`
	rs, err := ParseFile("r.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Severity != SeverityWarning || r.Summary != nil || r.Description != nil || r.ClearWhen != nil || r.HasClear ||
			r.For != 0 || len(r.Labels) != 0 || len(r.GPUs) != 0 || len(r.Receivers) != 0 {
			t.Errorf("%s: got %+v, want severity warning and every other field empty", r.Name, r)
		}
	}
}

func TestParseListEmpty(t *testing.T) {
	for _, text := range []string{"rules:\n", "rules: []\n", "rules: ~\n"} {
		rs, err := ParseFile("r.yaml", []byte(text))
		if err != nil || len(rs) != 0 {
			t.Errorf("ParseFile(%q): got %d rules, error %v; want none and no error", text, len(rs), err)
		}
	}
}

func TestCheckUnique(t *testing.T) {
	mk := func(name, file string, line int) *Rule {
		return &Rule{Name: name, File: file, Pos: strictyaml.Pos{Line: line, Col: 5}}
	}
	tests := []struct {
		name  string
		rules []*Rule
		want  []string
	}{
		{"none", nil, nil},
		{"distinct", []*Rule{mk("A", "a.yaml", 2), mk("B", "a.yaml", 4)}, nil},
		{"across files", []*Rule{mk("A", "config.yaml", 10), mk("A", "rules/a.yaml", 2)}, []string{
			`rules/a.yaml:2:5: alert "A" is defined twice (first at config.yaml:10:5); give each rule its own name`,
		}},
		{"three times", []*Rule{mk("A", "a.yaml", 2), mk("A", "a.yaml", 4), mk("A", "a.yaml", 6)}, []string{
			`a.yaml:4:5: alert "A" is defined twice (first at a.yaml:2:5); give each rule its own name`,
			`a.yaml:6:5: alert "A" is defined twice (first at a.yaml:2:5); give each rule its own name`,
		}},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range CheckUnique(tt.rules) {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func BenchmarkParseFile(b *testing.B) {
	data := []byte(`rules:
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95
    for: 1m
    severity: critical
    summary: "GPU {{.GPU}} memory at {{.Value | percent}} on {{.Host}}"
  - alert: GPUHot
    when: temperature > 85
    clear_when: temperature < 80
    for: 1m
`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFile("r.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSelectMIGInstances(t *testing.T) {
	a100 := "NVIDIA A100-SXM4-80GB"
	parent := &gpu.Device{Index: 0, UUID: "GPU-aaaa", Name: a100, MIGEnabled: true}
	slice := func(index int, parentUUID string, gi int, profile string) *gpu.Device {
		return &gpu.Device{Index: index, UUID: gpu.InstanceUUID(parentUUID, gi, 0), Name: a100,
			MIG: &gpu.MIG{ParentUUID: parentUUID, GPUInstance: gi, Profile: profile}}
	}
	small, big := slice(0, "GPU-aaaa", 9, "1g.10gb"), slice(0, "GPU-aaaa", 2, "3g.40gb")
	other := slice(1, "GPU-bbbb", 9, "1g.10gb")
	whole := &gpu.Device{Index: 1, UUID: "GPU-cccc", Name: a100}
	devices := []*gpu.Device{parent, small, big, other, whole}
	for _, tc := range []struct {
		gpus string
		want []bool // parent, small, big, other, whole
	}{
		{`"*/1g.10gb"`, []bool{false, true, false, true, false}},
		{`"*/*"`, []bool{false, true, true, true, false}},
		{`"0/*"`, []bool{false, true, true, false, false}},
		{`"GPU-AAAA/3g.*"`, []bool{false, false, true, false, false}},
		{`0`, []bool{true, true, true, false, false}},          // a GPU brings its instances
		{`"GPU-aaaa"`, []bool{true, true, true, false, false}}, // by parent
		{`"MIG-GPU-aaaa/9/0"`, []bool{false, true, false, false, false}},
		{`"NVIDIA A100*"`, []bool{true, true, true, true, true}},
	} {
		rs, err := ParseFile("inline.yaml", []byte("rules:\n  - alert: R\n    when: memory.used_percent > 95\n    gpus: ["+tc.gpus+"]\n"))
		if err != nil {
			t.Fatalf("gpus [%s]: %v", tc.gpus, err)
		}
		for i, d := range devices {
			if got := rs[0].AppliesTo(d); got != tc.want[i] {
				t.Errorf("gpus [%s] on %s (%s): got %v, want %v", tc.gpus, d.Label(), d.UUID, got, tc.want[i])
			}
		}
	}
}
