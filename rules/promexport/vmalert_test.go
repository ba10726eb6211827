package promexport_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// TestExportForVMAlert exports the example rules and every construct of
// the rule language for vmalert, for both schemas, each group at the
// interval it needs; compares the example's with their golden files, and
// has the real vmalert (-dryRun) load every file, its expressions checked
// by its MetricsQL parser and its templates by its template engine.
func TestExportForVMAlert(t *testing.T) {
	constructs, err := rules.LoadFile("testdata/constructs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, rs := range map[string][]*rules.Rule{"example": exampleRules(t), "constructs": constructs} {
		for _, schema := range schemas {
			t.Run(name+"/"+string(schema), func(t *testing.T) {
				t.Parallel()
				f, text := export(t, rs, promexport.Options{Schema: schema, Target: promexport.TargetVMAlert, Source: name + ".yaml"})
				file := name + "." + string(schema) + ".vmalert.rules.yml"
				if name == "example" {
					golden(t, file, text)
				}
				if !strings.Contains(string(text), "params: {nocache: [\"1\"]}") {
					t.Error("the groups do not ask VictoriaMetrics for answers as of now (nocache)")
				}
				for _, r := range f.Rules {
					if r.KeepFiringFor != 0 {
						t.Errorf("%s keeps keep_firing_for, which vmalert 1.79 refuses", r.Alert)
					}
				}
				path := writeFile(t, t.TempDir(), file, text)
				if out, ok := vmalertDryRun(t, path); !ok {
					t.Fatalf("vmalert -dryRun refuses the export:\n%s", out)
				}
			})
		}
	}
}

// vmalertDryRun has the real vmalert load a rule file without running it,
// and returns what it printed and whether it took the file.
func vmalertDryRun(t *testing.T, path string) (string, bool) {
	t.Helper()
	bin := fleettest.Binary(t, "vmalert")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-dryRun", "-rule="+path, "-loggerLevel=ERROR").CombinedOutput()
	return string(out), err == nil
}
