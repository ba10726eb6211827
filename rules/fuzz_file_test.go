package rules

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

// filePositionRE matches the FILE:LINE:COL: prefix of every problem.
var filePositionRE = regexp.MustCompile(`^[^:]*:\d+:\d+: `)

// FuzzParseFile feeds ParseFile arbitrary bytes: it must never panic, every
// problem must carry a position at line and column 1 or more, and a file
// that parses must give rules that can be used.
func FuzzParseFile(f *testing.F) {
	// testdata/fuzz/FuzzParseFile holds every testdata/*.yaml file as a
	// seed; these add a few odd cases.
	for _, s := range []string{
		"", "~", "rules:", "rules: [~]", "rules: &a [*a]", "rules: [{alert: A, when: xid > 0, labels: &l {a: *l}}]",
		"rules:\n- alert: A\n  when: \"temperature > 'x\"\n", "rules:\n- alert: A\n  when: >\n    temperature\n    > 5C\n",
		"rules: [{alert: A, when: temperature > 1, gpus: [\"[\", GPU-x, 99999999999999999999]}]",
		"rules: [{alert: A, when: temperature > 1, summary: \"{{template \\\"x\\\"}}\"}]",
		"a: *nope", "\t", "rules:\n\t- x", "%YAML 1.1\n---\nrules: []", "--- !!map\n? [a]\n: b",
	} {
		f.Add([]byte(s))
	}
	data := &TemplateData{Alert: "A", Name: "GPU", Labels: map[string]string{},
		Processes: []gpu.Process{{PID: 1}}, StartsAt: time.Unix(0, 0)}
	f.Fuzz(func(t *testing.T, in []byte) {
		rs, err := ParseFile("fuzz.yaml", in)
		if err != nil {
			for _, e := range strictyaml.AsErrors(err) {
				var pe *strictyaml.Error
				if !errors.As(e, &pe) || pe.Line < 1 || pe.Col < 1 {
					t.Fatalf("ParseFile(%q): got %q, want a *strictyaml.Error at line and column 1 or more", in, e)
				}
				if msg := e.Error(); !filePositionRE.MatchString(msg) || strings.Contains(msg, "\n") {
					t.Fatalf("ParseFile(%q): got problem %q, want one line starting FILE:LINE:COL: ", in, msg)
				}
			}
			return
		}
		for _, r := range rs {
			if r.Name == "" || r.When == nil || r.Severity == "" || r.File != "fuzz.yaml" || r.Pos.Line < 1 {
				t.Fatalf("ParseFile(%q): got incomplete rule %+v", in, r)
			}
			if r.HasClear != (r.ClearWhen != nil) {
				t.Fatalf("ParseFile(%q): rule %s: HasClear %v with clear_when %v", in, r.Name, r.HasClear, r.ClearWhen)
			}
			render(r.Summary, data)
			render(r.Description, data)
			r.AppliesTo(&gpu.Device{UUID: "MIG-x", Name: "NVIDIA H100", MIG: &gpu.MIG{ParentUUID: "GPU-x", Profile: "1g.10gb"}})
		}
	})
}
