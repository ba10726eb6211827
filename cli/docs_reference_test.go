package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/suites"
)

// The reference pages agree with the code: every config example loads,
// the config table has every setting, commands.md every command and flag
// with its default, the scenario lists every scenario, and the glibc the
// install page promises is the one the release checks.

// TestDocsConfigs parses every YAML example of the README and docs/ that
// is a config or a part of one, as the config loader does: a key in the
// wrong place (a webhook_url under the top-level slack:) fails here, not
// for the user who copies it. Parts refer to receivers they do not define;
// those references are all that may be missing.
func TestDocsConfigs(t *testing.T) {
	rd := readREADME(t)
	env := func(name string) (string, bool) {
		switch name {
		case "SLACK_WEBHOOK_URL":
			return "https://hooks.slack.com/services/T0/B0/x", true
		case "SLACK_BOT_TOKEN":
			return "xoxb-1", true
		case "SLACK_APP_TOKEN":
			return "xapp-1", true
		}
		return "x", true
	}
	// What a part of a config may lack: the rest of the config, the files
	// it names on a server (certificates, token files), a hash elided "…".
	partial := regexp.MustCompile(`is not a receiver|is not defined under receivers|sends to receiver|needs a bot token|matches no file|open /etc/gpuwatch/[^:]+: no such file|basic_auth_users\.alice is not a bcrypt hash`)
	n := 0
	for _, b := range rd.blocks() {
		text := dedent(b.lines)
		if b.lang == "yaml" && strings.HasPrefix(text, "# prometheus.yml") {
			checkPrometheusConfig(t, b, text)
			continue
		}
		if b.lang != "yaml" || strings.Contains(text, "\ntests:") {
			continue // a rule test file, not a config
		}
		if strings.HasPrefix(text, "- ") { // rules, as a rule file lists them
			text = "rules:\n  " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n  ") + "\n"
		}
		n++
		dir := t.TempDir()
		path := filepath.Join(dir, fmt.Sprintf("%s-line-%d.yaml", filepath.Base(b.page.name), b.line))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path, env)
		for _, e := range splitErrors(err) {
			if !partial.MatchString(e) {
				t.Errorf("the YAML at %s: %s", b, e)
			}
		}
	}
	if n < 10 {
		t.Errorf("got %d config examples in the docs, want the many they have", n)
	}
	// Inline examples that start with a key of the config file, such as
	// `slack: {bot_token: …}`, are parts of a config too.
	topLevel := regexp.MustCompile(`^(host|source|storage|server|metrics|slack|receivers|route|rule_files|rules|digests|people): \S`)
	for _, span := range rd.spans {
		if !topLevel.MatchString(span) {
			continue
		}
		path := filepath.Join(t.TempDir(), "inline.yaml")
		if err := os.WriteFile(path, []byte(span+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path, env)
		for _, e := range splitErrors(err) {
			if !partial.MatchString(e) {
				t.Errorf("the docs' inline YAML %q: %s", span, e)
			}
		}
	}
}

// checkPrometheusConfig checks a prometheus.yml the docs show with
// promtool, as Prometheus would load it, in the fleet suite; the files it
// names need not exist here.
func checkPrometheusConfig(t *testing.T, b fenced, text string) {
	t.Helper()
	if !suites.Asked(suites.FleetEnv) {
		t.Logf("the prometheus.yml at %s is checked by the fleet suite (%s=1)", b, suites.FleetEnv)
		return
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil && !suites.Required(suites.FleetEnv) {
		t.Logf("the prometheus.yml at %s is not checked: promtool is not installed", b)
		return
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "check", "config", "--syntax-only", path).CombinedOutput()
	if err != nil {
		t.Errorf("the prometheus.yml at %s: promtool check config: %v\n%s", b, err, out)
	}
}

func dedent(lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// TestDocsConfigTable checks that the config table of
// docs/configuration.md has a row for every setting the config file takes.
func TestDocsConfigTable(t *testing.T) {
	rd := readPage(t, "../docs/configuration.md")
	for _, key := range []string{"host", "source.type", "source.interval", "source.sim.scenario", "source.sim.seed", "source.sim.speed",
		"source.replay.file", "source.replay.speed", "source.prometheus.url", "source.prometheus.selector", "storage.path", "storage.retention", "server.listen", "metrics.per_process",
		"slack.bot_token", "slack.signing_secret", "slack.app_token", "slack.api_url", "slack.allowed_channels", "slack.admins",
		"receivers", "route", "rule_files", "rules", "digests", "people"} {
		if !strings.Contains(rd.text, "| `"+key+"` |") {
			t.Errorf("docs/configuration.md's config table has no row for %s", key)
		}
	}
	// Every field of the config's sections is one of those keys.
	for section, v := range map[string]any{"source": config.Source{}, "source.sim": config.SimSource{}, "source.replay": config.ReplaySource{},
		"source.prometheus": config.PrometheusSource{}, "source.kubernetes": config.KubernetesSource{}, "storage": config.Storage{}, "server": config.Server{}, "metrics": config.Metrics{}, "slack": config.Slack{}} {
		for _, name := range yamlFields(v) {
			key := section + "." + name
			if name == "sim" || name == "replay" || name == "prometheus" || name == "kubernetes" {
				continue
			}
			if !strings.Contains(rd.text, "| `"+key+"` |") {
				t.Errorf("docs/configuration.md's config table has no row for %s", key)
			}
		}
	}
}

// yamlFields are the YAML names of a config struct's fields.
func yamlFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// TestDocsCommandReference checks docs/commands.md against the commands'
// --help: a section for each command, naming each of its flags (those of
// its subcommands too), and the defaults its tables give are the flags'.
func TestDocsCommandReference(t *testing.T) {
	ref := readPage(t, "../docs/commands.md")
	usage := gpuwatchHelp(t, "help")
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(usage, -1) {
		name := m[1]
		section := sectionOf(ref, name)
		if section == "" {
			t.Errorf("docs/commands.md has no section for gpuwatch %s", name)
			continue
		}
		help := gpuwatchHelp(t, name, "--help")
		helps := []string{help}
		if sub := regexp.MustCompile(`^Usage: gpuwatch [a-z]+ ([a-z|]+) `).FindStringSubmatch(help); sub != nil && !strings.Contains(help, "\nFlags:") {
			helps = nil
			for _, s := range strings.Split(sub[1], "|") {
				helps = append(helps, gpuwatchHelp(t, name, s, "--help"))
			}
		}
		for _, h := range helps {
			for flag, def := range helpFlags(h) {
				if !regexp.MustCompile(`--` + flag + `\b`).MatchString(section) {
					t.Errorf("docs/commands.md, gpuwatch %s: no --%s", name, flag)
				}
				row := regexp.MustCompile("(?m)^\\| `--" + flag + `\b[^|]*\|[^|]*\| ` + "`?([^`|]*)`?" + ` \|$`).FindStringSubmatch(section)
				if row != nil && def != "" && row[1] != def {
					t.Errorf("docs/commands.md, gpuwatch %s --%s: the default is %q, the page says %q", name, flag, def, row[1])
				}
			}
		}
	}
}

// gpuwatchHelp runs gpuwatch in-process with args (a --help) and returns
// what it printed.
func gpuwatchHelp(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if code := cli.Main(context.Background(), args, &cli.Env{Stdout: &out, Stderr: &out}); code != cli.ExitOK {
		t.Fatalf("gpuwatch %s: exit %d\n%s", strings.Join(args, " "), code, &out)
	}
	return out.String()
}

// helpFlags are the flags a --help lists, with their defaults ("" for
// none).
func helpFlags(help string) map[string]string {
	out := map[string]string{}
	re := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)[^\n]*\n\s+[^\n]*?(?:\(default "?([^")]*)"?\))?$`)
	for _, m := range re.FindAllStringSubmatch(help, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// sectionOf is the text of the "## name…" section of a page; "" when it
// has none.
func sectionOf(p *page, name string) string {
	loc := regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(name) + `( .*)?$`).FindStringIndex(p.text)
	if loc == nil {
		return ""
	}
	rest := p.text[loc[1]:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// TestDocsScenarios checks that the docs name every scenario of the
// simulation where they list them, and count them right.
func TestDocsScenarios(t *testing.T) {
	rd := readREADME(t)
	all := sim.Scenarios()
	for _, where := range []struct{ page, marker string }{
		{"docs/configuration.md", "| `source.sim.scenario` |"},
		{"docs/commands.md", "| scenario | what happens |"},
	} {
		p := rd.page(t, where.page)
		i := strings.Index(p.text, where.marker)
		if i < 0 {
			t.Fatalf("%s: no %q", where.page, where.marker)
		}
		text := p.text[i:]
		if end := strings.Index(text, "\n\n"); end >= 0 {
			text = text[:end]
		}
		for _, s := range all {
			if !strings.Contains(text, "`"+s+"`") {
				t.Errorf("%s: the scenarios at %q lack %s", where.page, where.marker, s)
			}
		}
	}
	m := regexp.MustCompile(`one of (\d+) scenarios`).FindStringSubmatch(rd.pages[0].text)
	if m == nil || m[1] != fmt.Sprint(len(all)) {
		t.Errorf("the README counts the scenarios as %q; there are %d", m, len(all))
	}
}

// TestDocsGLIBC checks that every glibc version the docs promise is the
// one scripts/release checks the binaries against.
func TestDocsGLIBC(t *testing.T) {
	release, err := os.ReadFile("../scripts/release")
	if err != nil {
		t.Fatal(err)
	}
	max := regexp.MustCompile(`(?m)^max_glibc=(\S+)$`).FindSubmatch(release)
	if max == nil {
		t.Fatal("scripts/release no longer says max_glibc=")
	}
	n := 0
	for _, p := range readREADME(t).pages {
		for _, m := range regexp.MustCompile(`glibc (\d+\.\d+(?:\.\d+)?)`).FindAllStringSubmatch(p.text, -1) {
			n++
			if m[1] != string(max[1]) {
				t.Errorf("%s says glibc %s; the release needs glibc %s or later", p.name, m[1], max[1])
			}
		}
	}
	if n == 0 {
		t.Error("no page says which glibc the binaries need")
	}
}

// TestDocsConfigDefaults checks the defaults the config table gives
// against those the config loader fills in for a config that sets nothing
// (and for a hub, one that sets only its Prometheus).
func TestDocsConfigDefaults(t *testing.T) {
	table := readPage(t, "../docs/configuration.md")
	load := func(text string) *config.Config {
		c, err := config.Parse("config.yaml", []byte(text), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	plain := load("host: gpu-server-1\n")
	hub := load("source: {type: prometheus, prometheus: {url: 'http://prometheus:9090'}}\n")
	for key, got := range map[string]any{
		"source.type":               plain.Source.Type,
		"source.interval":           plain.Source.Interval,
		"source.sim.scenario":       plain.Source.Sim.Scenario,
		"source.sim.seed":           plain.Source.Sim.Seed,
		"source.sim.speed":          plain.Source.Sim.Speed,
		"source.replay.speed":       plain.Source.Replay.Speed,
		"source.prometheus.schema":  hub.Source.Prometheus.Schema,
		"source.prometheus.timeout": hub.Source.Prometheus.Timeout,
		"storage.retention":         plain.Storage.Retention,
		"server.listen":             plain.Server.Listen,
		"metrics.per_process":       plain.Metrics.PerProcess,
	} {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(key) + "` \\|.*\\| `([^`]*)`[^|]* \\|$").FindStringSubmatch(table.text)
		if row == nil {
			t.Errorf("docs/configuration.md: no default for %s", key)
			continue
		}
		shown := row[1]
		if d, ok := got.(time.Duration); ok {
			if want, err := time.ParseDuration(shown); err != nil || want != d {
				t.Errorf("docs/configuration.md: %s defaults to %v, the page says %s", key, d, shown)
			}
			continue
		}
		if fmt.Sprint(got) != shown {
			t.Errorf("docs/configuration.md: %s defaults to %v, the page says %s", key, got, shown)
		}
	}
}
