package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/rules/promexport"
)

// ruleFileName is the exported rule file's name in --out.
const ruleFileName = "gpuwatch.rules.yml"

func rulesCommand(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErrf("rules: say what to do: gpuwatch rules export (see gpuwatch rules --help)")
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(env.Stdout, `Usage: gpuwatch rules export [flags]

The rules elsewhere:
  export   write the rules as a Prometheus rule file, and rule tests as
           promtool tests
"gpuwatch rules export --help" shows the flags.
`)
		return flag.ErrHelp
	case "export":
		return rulesExport(ctx, env, args[1:])
	}
	return usageErrf("rules: unknown action %q: use export", args[0])
}

func rulesExport(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "rules export", "--schema gpuwatch|dcgm [--target prometheus|vmalert] [--config FILE] [--interval D] [--tests FILE]... [--out DIR]", `
Writes the rules (of --config, or the built-in example rules) as a
Prometheus rule file that promtool check rules accepts, or one for
VictoriaMetrics' vmalert (--target vmalert), reading the series of
gpuwatch agents (--schema gpuwatch) or of NVIDIA's dcgm-exporter (--schema
dcgm). Each alert is a group of its own, with what only it reads, at the
interval it needs; a trend is computed in groups of its own, which the
alerts on it read. What a rule
uses that the engine cannot do exactly is said on standard error and in
the file: the rule is marked approximate, or left out. With --tests,
gpuwatch rule test files (gpuwatch test) are written as promtool test
rules files too, next to the rule file in --out.`)
	schemaName := fs.String("schema", "", "the series the rules read: gpuwatch (gpuwatch agents' /metrics) or dcgm (dcgm-exporter) (required)")
	targetName := fs.String("target", "prometheus", "the engine that evaluates them: prometheus (2.42 or later) or vmalert (1.79 or later, over VictoriaMetrics)")
	configPath := fs.String("config", "", "config file whose rules to export (default: the built-in example rules)")
	interval := fs.Duration("interval", 0, "how often every group is to be evaluated, at most 5m (default: each group what its rules need: a tenth of their shortest window (a 48th of a trend's), half their shortest for, at most 1m, and a longer window in a group of its own at a tenth of it; with --tests, the shortest of them for every group)")
	var tests []string
	fs.Func("tests", "a gpuwatch rule test file of the same rules to write as a promtool test; repeat it for more (needs --out)", func(s string) error {
		tests = append(tests, s)
		return nil
	})
	out := fs.String("out", "", "write the rule file ("+ruleFileName+") and the tests into this folder, not the rule file to standard output")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("rules export", args); err != nil {
		return err
	}
	if *schemaName == "" {
		return usageErrf("rules export: name the series the rules read: --schema gpuwatch (gpuwatch agents) or --schema dcgm (dcgm-exporter)")
	}
	schema, err := promexport.ParseSchema(*schemaName)
	if err != nil {
		return usageErrf("rules export: --schema: %v", err)
	}
	target, err := promexport.ParseTarget(*targetName)
	if err != nil {
		return usageErrf("rules export: --target: %v", err)
	}
	if *interval < 0 || *interval > promexport.MaxInterval || *interval%time.Millisecond != 0 {
		return usageErrf("rules export: --interval %v: give a whole number of milliseconds up to %v", *interval, promexport.MaxInterval)
	}
	if len(tests) > 0 && *out == "" {
		return usageErrf("rules export: --tests writes several files: name a folder for them with --out DIR")
	}
	cfg, err := configOrExample(*configPath, env, config.PartRules, config.PartRuleFiles, config.PartSource)
	if err != nil {
		return err
	}
	source := exampleConfigName
	if *configPath != "" {
		source = filepath.Base(*configPath)
	}
	opts := promexport.Options{Schema: schema, Target: target, Interval: *interval, Source: source}
	if opts.Interval == 0 && len(tests) > 0 {
		// promtool evaluates every group at the test's interval.
		opts.Interval = promexport.NeededInterval(cfg.Rules)
	}
	file, err := promexport.Export(cfg.Rules, opts)
	if err != nil {
		return userErr(err)
	}
	printNotes(env.Stderr, file.Notes)
	var text bytes.Buffer
	if err := file.Write(&text); err != nil {
		return err
	}
	if *out == "" {
		_, err := env.Stdout.Write(text.Bytes())
		return err
	}
	written, err := writeTests(env, *out, tests, cfg.Rules, file)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(*out, ruleFileName)
	if err := os.WriteFile(path, text.Bytes(), 0o644); err != nil {
		return err
	}
	for name, data := range written {
		if err := os.WriteFile(filepath.Join(*out, name), data, 0o644); err != nil {
			return err
		}
	}
	alerts := 0
	for _, r := range file.Rules {
		if r.Alert != "" {
			alerts++
		}
	}
	fmt.Fprintf(env.Stderr, "wrote %s: %s", path, plural.Count(alerts, "alert"))
	if n := len(file.LeftOut); n > 0 {
		fmt.Fprintf(env.Stderr, " (%s left out)", plural.Count(n, "rule"))
	}
	if len(written) > 0 {
		fmt.Fprintf(env.Stderr, "; and %s", plural.Count(len(written), "promtool test file"))
	}
	fmt.Fprintln(env.Stderr)
	return nil
}

// writeTests exports each rule test file, returning the files' text by
// name; a test file of other rules than the exported ones is an error.
func writeTests(env *Env, dir string, paths []string, exported []*rules.Rule, file *promexport.File) (map[string][]byte, error) {
	out := map[string][]byte{}
	from := map[string]string{}
	for _, path := range paths {
		name := filepath.Base(path)
		if prev, dup := from[name]; dup || name == ruleFileName {
			return nil, usageErrf("rules export: --tests %s and %s would both be %s in %s: give them other names", prev, path, name, dir)
		}
		from[name] = path
		tf, err := rules.ReadTestFile(path)
		if problems := strictyaml.AsErrors(err); len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintln(env.Stderr, p)
			}
			return nil, userErrf("rules export: %s has %s (printed above)", path, plural.Count(len(problems), "problem"))
		}
		if why := differentRules(tf.Rules, exported); why != "" {
			return nil, userErrf("rules export: %s tests other rules than the ones exported: %s; export the rules it tests with --config", path, why)
		}
		tests := promexport.ExportTests(tf, file, ruleFileName)
		for _, n := range tests.Notes {
			fmt.Fprintf(env.Stderr, "%s: %s\n", path, n)
		}
		var b bytes.Buffer
		if err := tests.Write(&b); err != nil {
			return nil, err
		}
		out[name] = b.Bytes()
	}
	return out, nil
}

// differentRules says how two sets of rules differ in what decides their
// alerts, "" when they do not.
func differentRules(tested, exported []*rules.Rule) string {
	byName := map[string]*rules.Rule{}
	for _, r := range exported {
		byName[r.Name] = r
	}
	for _, t := range tested {
		e := byName[t.Name]
		switch {
		case e == nil:
			return fmt.Sprintf("%s is not one of them", t.Name)
		case e.When.String() != t.When.String(), (e.ClearWhen == nil) != (t.ClearWhen == nil),
			e.ClearWhen != nil && e.ClearWhen.String() != t.ClearWhen.String(),
			e.Timing != t.Timing, e.Severity != t.Severity, !maps.Equal(e.Labels, t.Labels):
			return fmt.Sprintf("%s differs", t.Name)
		}
	}
	return ""
}

// printNotes writes what the export could not carry exactly: each rule's
// parts in a line ("GPUMemoryLeak: approximate: when: …"), and under the
// lines that share a reason, the reason once, less what an earlier reason
// said already: many rules are approximate for the same reasons.
func printNotes(w io.Writer, notes []promexport.Note) {
	var whys []string
	byWhy := map[string][]promexport.Note{}
	for _, n := range notes {
		if _, ok := byWhy[n.Why]; !ok {
			whys = append(whys, n.Why)
		}
		byWhy[n.Why] = append(byWhy[n.Why], n)
	}
	said := map[string]bool{}
	for _, why := range whys {
		for _, n := range byWhy[why] {
			fmt.Fprintf(w, "%s: %s: %s\n", n.Rule, n.Kind, n.Part)
		}
		var fresh []string
		for _, clause := range strings.Split(why, "; ") {
			if !said[clause] {
				said[clause] = true
				fresh = append(fresh, clause)
			}
		}
		if len(fresh) == 0 {
			fmt.Fprintln(w, "  for the reasons said above")
			continue
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(fresh, "; "))
	}
}
