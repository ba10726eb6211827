package promexport_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var schemas = []promexport.Schema{promexport.SchemaGPUWatch, promexport.SchemaDCGM}

// export writes rs as a rule file.
func export(t *testing.T, rs []*rules.Rule, opts promexport.Options) (*promexport.File, []byte) {
	t.Helper()
	f, err := promexport.Export(rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	return f, b.Bytes()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the export differs from %s (go test -update rewrites it); got:\n%s", path, got)
	}
}

// TestExportGolden exports the example config's rules and a file of every
// construct of the rule language, for both schemas, compares them with
// their golden files, and has promtool check them.
func TestExportGolden(t *testing.T) {
	constructs, err := rules.LoadFile("testdata/constructs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sets := []struct {
		name     string
		rules    []*rules.Rule
		interval time.Duration
	}{
		{"example", exampleRules(t), 5 * time.Second},
		{"constructs", constructs, 30 * time.Second},
	}
	for _, set := range sets {
		for _, schema := range schemas {
			t.Run(set.name+"/"+string(schema), func(t *testing.T) {
				t.Parallel()
				f, text := export(t, set.rules, promexport.Options{Schema: schema, Interval: set.interval, Source: set.name + ".yaml"})
				name := set.name + "." + string(schema) + ".rules.yml"
				golden(t, name, text)
				dir := t.TempDir()
				writeFile(t, dir, name, text)
				out, ok := promtool(t, dir, "check", "rules", name)
				if !ok {
					t.Fatalf("promtool check rules refuses the export:\n%s", out)
				}
				alerts := 0
				for _, r := range f.Rules {
					if r.Alert != "" {
						alerts++
					}
				}
				if want := len(set.rules) - len(f.LeftOut); alerts != want {
					t.Errorf("got %d alerts, want %d: every rule is exported or left out", alerts, want)
				}
				for _, name := range f.LeftOut {
					if !strings.Contains(string(text), "# "+name+": left out: ") {
						t.Errorf("%s is left out, but the file does not say why", name)
					}
				}
			})
		}
	}
}
