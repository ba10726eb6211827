package promexport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/suites"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// TestExportedRuleTestsPass exports examples/rules_test.yaml, which tests
// every example rule, and runs it with promtool against the exported
// rules, for both schemas.
func TestExportedRuleTestsPass(t *testing.T) {
	if raceDetector {
		t.Skip("runs promtool over the example rule tests (not with -race)")
	}
	suites.Fleet(t)
	tf, err := rules.ReadTestFile("../../examples/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Every 5s, as gpuwatch evaluates the example config; dcgm every 20s,
	// the longest interval the tests' samples fall on.
	for schema, interval := range map[promexport.Schema]time.Duration{promexport.SchemaGPUWatch: 5 * time.Second, promexport.SchemaDCGM: 20 * time.Second} {
		t.Run(string(schema), func(t *testing.T) {
			t.Parallel()
			f, text := export(t, tf.Rules, promexport.Options{Schema: schema, Interval: interval, Source: "config.example.yaml"})
			tests := promexport.ExportTests(tf, f, "rules.yml")
			if len(tests.Notes) > 0 {
				t.Errorf("checks left out of the export: %v", tests.Notes)
			}
			checks := 0
			for _, c := range tests.Cases {
				checks += len(c.Checks)
			}
			want := 0
			for _, c := range tf.Cases {
				want += len(c.Checks)
			}
			if len(tests.Cases) != len(tf.Cases) || checks != want {
				t.Errorf("got %d tests with %d checks, want %d with %d", len(tests.Cases), checks, len(tf.Cases), want)
			}
			dir := t.TempDir()
			writeFile(t, dir, "rules.yml", text)
			writeFile(t, dir, "rules_test.yml", []byte(tests.String()))
			if out, ok := promtool(t, dir, "test", "rules", "rules_test.yml"); !ok {
				t.Fatalf("promtool test rules fails the exported tests:\n%s", out)
			}
		})
	}
}

// TestExportTestsLeavesOutWhatCannotHold: a check between two evaluations,
// or of a rule left out, is left out and said so.
func TestExportTestsLeavesOutWhatCannotHold(t *testing.T) {
	tf, err := rules.ReadTestFile("../../examples/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := export(t, tf.Rules, promexport.Options{Schema: promexport.SchemaGPUWatch, Interval: 30 * time.Second, Source: "x"})
	tests := promexport.ExportTests(tf, f, "rules.yml")
	var notes []string
	for _, n := range tests.Notes {
		notes = append(notes, n.String())
	}
	text := strings.Join(notes, "\n")
	for _, want := range []string{
		`test "a GPU throttling in short cycles above 85 C alerts once": left out: check at 4m20s: it falls between two evaluations of the exported rules (every 30s)`,
		`check at 1m20s`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("notes\n%s\nwant %q", text, want)
		}
	}
	if !strings.Contains(tests.String(), "# - "+notes[0]) {
		t.Errorf("the test file does not say what it leaves out:\n%s", tests.String())
	}
}

// TestAnnotationsRenderInPrometheus: the translated summaries, rendered by
// Prometheus for firing alerts, say what gpuwatch's say.
func TestAnnotationsRenderInPrometheus(t *testing.T) {
	suites.Fleet(t) // runs promtool
	_, text := export(t, exampleRules(t), promexport.Options{Schema: promexport.SchemaGPUWatch, Interval: time.Minute, Source: "x"})
	gpu := func(i string) string {
		return `{gpu="` + i + `", host="node1", name="NVIDIA H100 80GB HBM3", uuid="GPU-` + i + `"}`
	}
	var input strings.Builder
	for _, s := range []struct{ name, gpu, values string }{
		{"gpuwatch_gpu_info", "0", "1x60"}, {"gpuwatch_gpu_lost", "0", "0x60"},
		{"gpuwatch_gpu_temperature_celsius", "0", "88x60"},
		{"gpuwatch_gpu_memory_used_bytes", "0", "42949672960x14 83751862272x45"}, // 40 GiB, then 97.5%
		{"gpuwatch_gpu_memory_total_bytes", "0", "85899345920x60"},
		{"gpuwatch_gpu_utilization_ratio", "0", "0.9x60"}, {"gpuwatch_gpu_processes", "0", "1x60"},
		{"gpuwatch_gpu_info", "1", "1x60"}, {"gpuwatch_gpu_lost", "1", "0x60"},
		{"gpuwatch_gpu_memory_used_bytes", "1", "21474836480x60"}, // 20 GiB, held idle
		{"gpuwatch_gpu_memory_total_bytes", "1", "85899345920x60"},
		{"gpuwatch_gpu_utilization_ratio", "1", "0x60"}, {"gpuwatch_gpu_processes", "1", "1x60"},
	} {
		input.WriteString("      - series: '" + s.name + gpu(s.gpu) + "'\n        values: '" + s.values + "'\n")
	}
	input.WriteString(`      - series: 'gpuwatch_gpu_xid_errors_total{gpu="0", host="node1", name="NVIDIA H100 80GB HBM3", uuid="GPU-0", xid="79"}'` + "\n        values: '_x29 1x30'\n")
	alert := func(name string, at, gpu, severity, summary string) string {
		return "      - alertname: " + name + "\n        eval_time: " + at + "\n        exp_alerts:\n" +
			"          - exp_labels: {host: node1, gpu: \"" + gpu + "\", uuid: GPU-" + gpu + ", severity: " + severity + "}\n" +
			"            exp_annotations: {summary: \"" + summary + "\"}\n"
	}
	test := "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n" + input.String() +
		"    alert_rule_test:\n" +
		alert("GPUHot", "5m", "0", "critical", "GPU 0 on node1 runs hot: up to 88 C, above 85 C within every 2 minutes for 3m") +
		alert("GPUMemoryNearFull", "18m", "0", "critical", "GPU 0 memory at 97.5% on node1") +
		alert("GPUHardwareXID", "30m", "0", "critical", "GPU 0 on node1: XID 79: the GPU has fallen off the bus — reset the GPU or reboot the node") +
		alert("GPUIdleButHeld", "55m", "1", "warning", "GPU 1 holds 20GiB but has computed nothing for 45m")
	dir := t.TempDir()
	writeFile(t, dir, "rules.yml", text)
	writeFile(t, dir, "test.yml", []byte(test))
	if out, ok := promtool(t, dir, "test", "rules", "test.yml"); !ok {
		t.Fatalf("promtool test rules:\n%s\n%s", out, test)
	}
}
