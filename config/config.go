// Package config loads gpuwatch's configuration file: one YAML file with the
// source to sample, the rules (inline or from rule_files), the receivers and
// the route, storage and server settings. Loading expands ${ENV} variables,
// decodes strictly (unknown fields are errors), fills in defaults and
// validates everything, reporting every problem at once as FILE:LINE:COL.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/alertmanager"
	"github.com/gpuwatch/gpuwatch/notifier/slack"
	"github.com/gpuwatch/gpuwatch/notifier/webhook"
	"github.com/gpuwatch/gpuwatch/people"
	"github.com/gpuwatch/gpuwatch/rules"
)

// Config is a loaded, validated configuration.
type Config struct {
	// File is the path the config was loaded from.
	File string
	// Host names this machine in alerts; default: the hostname.
	Host      string
	Source    Source
	Storage   Storage
	Server    Server
	Metrics   Metrics
	Slack     Slack
	Receivers []Receiver
	Route     notifier.RouteConfig
	RuleFiles []string
	// Rules are the inline rules and those of every rule file, in order.
	Rules []*rules.Rule
	// Digests are the scheduled usage digests.
	Digests []Digest
	// People maps the identities on the GPUs to Slack users (people:).
	People people.Config

	root *yaml.Node // the file's document, for the positions of later checks
}

// Source says where snapshots come from.
type Source struct {
	Type       string           `yaml:"type"`     // nvml | sim | replay | prometheus
	Interval   time.Duration    `yaml:"interval"` // sampling interval (nvml), step (sim), evaluation interval (prometheus)
	Sim        SimSource        `yaml:"sim"`
	Replay     ReplaySource     `yaml:"replay"`
	Prometheus PrometheusSource `yaml:"prometheus"`
	// Kubernetes names an nvml source's pods, with their labels, from
	// the Kubernetes API server.
	Kubernetes KubernetesSource `yaml:"kubernetes"`
}

// SimSource configures simulated GPUs.
type SimSource struct {
	Scenario string  `yaml:"scenario"`
	Seed     uint64  `yaml:"seed"`
	Speed    float64 `yaml:"speed"` // simulated seconds per real second (default 1); 0 as fast as possible
}

// ReplaySource configures replaying a GPU log (any format replay reads).
type ReplaySource struct {
	File  string  `yaml:"file"`
	Speed float64 `yaml:"speed"` // 0: as fast as the CPU goes
	// Columns names the columns of a CSV log written without its header
	// (--format=csv,noheader), as replay's --columns does.
	Columns string `yaml:"columns"`
	// MemoryTotal is each GPU's memory ("80GiB") for a log without
	// memory.total, as replay's --memory-total does.
	MemoryTotal string `yaml:"memory_total"`
	// SkipBad skips malformed rows, counting them, as --skip-bad does.
	SkipBad bool `yaml:"skip_bad"`
	// Step is how often a log without times was sampled, as replay's
	// --step says.
	Step time.Duration `yaml:"step"`
}

// Storage says where gpuwatch keeps its state.
type Storage struct {
	Path string `yaml:"path"`
	// Retention is how long hourly usage rollups are kept.
	Retention time.Duration `yaml:"retention"`
}

// Metrics says what GET /metrics serves beyond the per-GPU and per-user
// series.
type Metrics struct {
	// PerProcess adds gpuwatch_gpu_process_memory_bytes, one series per
	// process on a GPU: a series per job, so off unless asked.
	PerProcess bool `yaml:"per_process"`
	// PodLabels are Kubernetes pod label keys the per-process series
	// carry, each as label_KEY (an agent reads them from the API server,
	// source.kubernetes): a hub's people: section maps owners by them.
	PodLabels []string `yaml:"pod_labels"`
}

// Slack is the Slack app: the bot token Slack receivers post with, and
// (for the slash commands to come) the signing secret and app token.
type Slack struct {
	BotToken        string   `yaml:"bot_token"`
	SigningSecret   string   `yaml:"signing_secret"`
	AppToken        string   `yaml:"app_token"`
	APIURL          string   `yaml:"api_url"` // a Slack-compatible API base; empty: Slack's
	AllowedChannels []string `yaml:"allowed_channels"`
	Admins          []string `yaml:"admins"`
}

// Receiver is a place notifications go to; exactly one kind is set.
type Receiver struct {
	Pos     strictyaml.Pos
	Name    string          `yaml:"name,required"`
	Console *Console        `yaml:"console"`
	Slack   *slack.Config   `yaml:"slack"`
	Webhook *webhook.Config `yaml:"webhook"`
	// Alertmanager pushes to Alertmanager's API.
	Alertmanager *alertmanager.Config `yaml:"alertmanager"`
}

// Console prints notifications to standard output.
type Console struct{}

// Defaults.
const (
	DefaultInterval    = 5 * time.Second
	DefaultStoragePath = "/var/lib/gpuwatch/gpuwatch.db"
	DefaultListen      = "127.0.0.1:9477"
	// DefaultSimSpeed is a sim source's speed: simulated seconds per real
	// second, the wall clock's.
	DefaultSimSpeed = 1
)

// fileYAML is the file as written; rules stay a node so their errors point
// into the file.
type fileYAML struct {
	Host      string               `yaml:"host"`
	Source    Source               `yaml:"source"`
	Storage   Storage              `yaml:"storage"`
	Server    Server               `yaml:"server"`
	Metrics   Metrics              `yaml:"metrics"`
	Slack     Slack                `yaml:"slack"`
	Receivers []Receiver           `yaml:"receivers"`
	Route     notifier.RouteConfig `yaml:"route"`
	RuleFiles []string             `yaml:"rule_files"`
	Rules     yaml.Node            `yaml:"rules"`
	Digests   []Digest             `yaml:"digests"`
	People    people.Config        `yaml:"people"`
}

// Load reads, expands, decodes and validates the config file at path;
// lookup resolves ${ENV} variables (os.LookupEnv). The error lists every
// problem (a strictyaml.Errors) or says why the file could not be read.
func Load(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := strictyaml.ReadData(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, lookup)
}

// Parse is Load on text already read; lookup resolves ${ENV} variables.
func Parse(file string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(file, data, lookup, nil)
}

// parse is Parse of the parts named, or of every part when parts is nil
// (see LoadParts).
func parse(file string, data []byte, lookup func(string) (string, bool), parts []Part) (*Config, error) {
	root, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	sections := sectionsOf(root)
	errs, redactor := expandEnv(file, sections.used(parts), lookup)
	if len(errs) > 0 {
		return nil, errs
	}
	var y fileYAML
	errs = strictyaml.Decode(file, root, &y)
	c := &Config{
		File: file, Host: y.Host, Source: y.Source, Storage: y.Storage, Server: y.Server, Metrics: y.Metrics,
		Slack: y.Slack, Receivers: y.Receivers, Route: y.Route, RuleFiles: y.RuleFiles,
		Digests: y.Digests, People: y.People, root: root,
	}
	c.applyDefaults(lookup)
	// Files a config names are relative to it, like rule_files.
	c.Source.Replay.File = besideConfig(file, c.Source.Replay.File)
	c.Server.BearerTokenFile = besideConfig(file, c.Server.BearerTokenFile)
	if t := c.Server.TLS; t != nil {
		t.CertFile, t.KeyFile = besideConfig(file, t.CertFile), besideConfig(file, t.KeyFile)
	}
	for _, r := range c.Receivers {
		if r.Alertmanager != nil {
			r.Alertmanager.ResolvePaths(func(p string) string { return besideConfig(file, p) })
		}
	}
	if y.Rules.Kind != 0 && uses(parts, PartRules) {
		inline, rerrs := rules.ParseList(file, &y.Rules)
		c.Rules = append(c.Rules, inline...)
		errs = append(errs, rerrs...)
	}
	if uses(parts, PartRuleFiles) {
		errs = append(errs, c.loadRuleFiles(root)...)
	}
	errs = append(errs, rules.CheckUnique(c.Rules)...)
	errs = append(errs, c.checkRuleCount()...)
	errs = append(errs, c.validate(root)...)
	errs = sections.only(file, parts, errs)
	errs.Sort()
	redact(errs, redactor)
	return c, errs.Err()
}

// besideConfig makes a path the config names relative to the config's
// folder; an absolute or empty one stays as it is.
func besideConfig(config, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(config), path)
}

func (c *Config) applyDefaults(lookup func(string) (string, bool)) {
	if c.Source.Type == "" {
		c.Source.Type = "nvml"
	}
	intervalSet := c.Source.Interval != 0
	if !intervalSet {
		c.Source.Interval = DefaultInterval
	}
	c.prometheusDefaults(intervalSet)
	if c.Source.Sim.Scenario == "" {
		c.Source.Sim.Scenario = "all"
	}
	if !c.written("source", "sim", "speed") {
		// A simulation runs on the wall clock unless told otherwise: run
		// is a daemon; gpuwatch demo is where time runs fast.
		c.Source.Sim.Speed = DefaultSimSpeed
	}
	if c.Storage.Path == "" {
		c.Storage.Path = DefaultStorage(lookup)
	}
	if c.Storage.Retention == 0 {
		c.Storage.Retention = DefaultRetention
	}
	c.digestDefaults()
	c.People.ApplyDefaults()
	if c.Server.Listen == "" {
		c.Server.Listen = DefaultListen
	}
	if len(c.Receivers) == 0 && c.Route.Receiver == "" {
		c.Receivers = []Receiver{{Name: "console", Console: &Console{}}}
		c.Route.Receiver = "console"
	}
}

// loadRuleFiles reads each rule file; patterns are relative to the config
// file's folder and may be globs.
func (c *Config) loadRuleFiles(root *yaml.Node) strictyaml.Errors {
	var errs strictyaml.Errors
	dir := filepath.Dir(c.File)
	for i, pattern := range c.RuleFiles {
		at := nodeAt(root, "rule_files", i)
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(dir, pattern)
		}
		paths, err := filepath.Glob(pattern)
		if err != nil {
			errs = append(errs, strictyaml.Errorf(c.File, at, "rule_files: %q is not a valid glob: %v", c.RuleFiles[i], err))
			continue
		}
		if len(paths) == 0 {
			errs = append(errs, strictyaml.Errorf(c.File, at, "rule_files: %q matches no file (paths are relative to %s)", c.RuleFiles[i], dir))
			continue
		}
		for _, p := range paths {
			rs, err := rules.LoadFile(p)
			c.Rules = append(c.Rules, rs...)
			if perr := (*strictyaml.Error)(nil); err != nil && !errors.As(err, &perr) {
				// The file could not be read (a folder, no permission):
				// point at the entry that named it.
				errs = append(errs, strictyaml.Errorf(c.File, at, "rule_files: %v", err))
				continue
			}
			errs = append(errs, strictyaml.AsErrors(err)...)
		}
	}
	return errs
}

// written reports whether the file sets the value at keys (an empty value
// sets nothing: it keeps the default, as strictyaml decodes it).
func (c *Config) written(keys ...string) bool {
	if c.root == nil {
		return false
	}
	n := strictyaml.Resolve(c.root)
	for _, key := range keys {
		if n = mappingValue(n, key); n == nil {
			return false
		}
	}
	return !(n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == ""))
}

// nodePath finds the value at root.keys[0].keys[1]… for an error position;
// where a key is missing it stops at the deepest node found, so a problem
// with a defaulted setting points at the section that lacks it.
func nodePath(root *yaml.Node, keys ...string) *yaml.Node {
	n := strictyaml.Resolve(root)
	for _, key := range keys {
		next := mappingValue(n, key)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == key {
			return strictyaml.Resolve(n.Content[j+1])
		}
	}
	return nil
}

// nodeAt finds root.key[i] for an error position, falling back to root.key
// and then to the root.
func nodeAt(root *yaml.Node, key string, i int) *yaml.Node {
	v := mappingValue(strictyaml.Resolve(root), key)
	switch {
	case v == nil:
		return root
	case i < len(v.Content):
		return v.Content[i]
	}
	return v
}

func (c *Config) validate(root *yaml.Node) strictyaml.Errors {
	var errs strictyaml.Errors
	fail := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, strictyaml.Errorf(c.File, n, format, args...))
	}
	at := func(keys ...string) *yaml.Node { return nodePath(root, keys...) }
	switch c.Source.Type {
	case "nvml":
	case "sim":
		if !slices.Contains(sim.Scenarios(), c.Source.Sim.Scenario) {
			fail(at("source", "sim", "scenario"), "source.sim.scenario %q is not one of %s", c.Source.Sim.Scenario, strings.Join(sim.Scenarios(), ", "))
		}
		if c.Source.Sim.Speed < 0 {
			fail(at("source", "sim", "speed"), "source.sim.speed must be 0 (as fast as possible) or more")
		}
	case "replay":
		if c.Source.Replay.File == "" {
			fail(at("source", "replay", "file"), "source.replay.file is required with type replay: the nvidia-smi CSV log to replay")
		}
		if c.Source.Replay.Speed < 0 {
			fail(at("source", "replay", "speed"), "source.replay.speed must be 0 (as fast as possible) or more")
		}
		if cols := c.Source.Replay.Columns; cols != "" {
			if err := replay.CheckColumns(cols); err != nil {
				fail(at("source", "replay", "columns"), "source.replay.columns %v", err)
			}
		}
		if total := c.Source.Replay.MemoryTotal; total != "" {
			if _, err := replay.ParseMemory(total); err != nil {
				fail(at("source", "replay", "memory_total"), "source.replay.memory_total %q: %v", total, err)
			}
		}
		if c.Source.Replay.Step < 0 {
			fail(at("source", "replay", "step"), "source.replay.step %v is negative: give how often the log was sampled, e.g. 2s", c.Source.Replay.Step)
		}
	case "prometheus":
		c.checkPrometheus(at, fail)
	default:
		fail(at("source", "type"), "source.type %q is not one of nvml, sim, replay, prometheus", c.Source.Type)
	}
	if c.Source.Interval < 100*time.Millisecond {
		fail(at("source", "interval"), "source.interval %v is too short: sample at most every 100ms (5s is a good default)", c.Source.Interval)
	}
	if c.Source.Type == "sim" && c.Source.Interval > sim.MaxStep {
		fail(at("source", "interval"), "source.interval %v is too long for a simulation: it steps over the scenarios' events; use at most %v", c.Source.Interval, sim.MaxStep)
	}
	if p := listenProblem(c.Server.Listen); p != "" {
		fail(at("server", "listen"), "server.listen %q %s", c.Server.Listen, p)
	}
	c.checkServer(at, fail)
	c.checkSlackTokens(at, fail)
	if len(c.Host) > gpu.MaxNameBytes {
		fail(at("host"), "host is %d bytes, the most is %d: give this machine's name as others know it", len(c.Host), gpu.MaxNameBytes)
	}
	names := map[string]bool{}
	for i, r := range c.Receivers {
		item := nodeAt(root, "receivers", i)
		switch {
		case len(r.Name) > MaxNameBytes:
			fail(nodePath(item, "name"), "receiver name is %d bytes, the most is %d: name it in a few words (like team-slack)", len(r.Name), MaxNameBytes)
		case names[r.Name]:
			fail(item, "receiver %q is defined twice", r.Name)
		}
		names[r.Name] = true
		for _, problem := range c.checkReceiver(&r) {
			fail(item, "receiver %q %s", r.Name, problem)
		}
		if r.Alertmanager != nil {
			block := nodePath(item, "alertmanager")
			for _, p := range r.Alertmanager.Check() {
				// routeNode finds "urls[1]" and "tls.ca_file" below the block.
				fail(routeNode(block, p.Field), "receiver %q alertmanager.%s: %s", r.Name, p.Field, p.Text)
			}
		}
	}
	_, problems := notifier.NewRoute(c.Route)
	for _, p := range problems {
		fail(routeNode(at("route"), p.Path), "%s", p.Error())
	}
	c.checkRouteReceivers(at("route"), "route", &c.Route, names, fail)
	c.checkDigests(root, fail)
	c.checkPeople(root, fail)
	c.checkKubernetes(root, fail)
	for _, r := range c.Rules {
		for _, name := range r.Receivers {
			if !names[name] {
				errs = append(errs, &strictyaml.Error{File: r.File, Pos: r.Pos,
					Msg: fmt.Sprintf("alert %q sends to receiver %q, which is not defined under receivers:", r.Name, name)})
			}
		}
	}
	return errs
}

// listenProblem says what is wrong with a listen address, as run would
// find out when it starts listening; "" when nothing is.
func listenProblem(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "is not host:port: write it like " + DefaultListen + " (or :9477 for every interface)"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Sprintf("has port %q, which is not a number from 0 to 65535", port)
		}
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("has host %q, which is not a host name or IP address", host)
	}
	return ""
}

// checkSlackTokens reports Slack tokens of the wrong kind, the common
// mix-up of the app's three secrets. The messages never quote a token.
func (c *Config) checkSlackTokens(at func(...string) *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	if t := c.Slack.BotToken; t != "" && !strings.HasPrefix(t, "xoxb-") {
		fail(at("slack", "bot_token"), "slack.bot_token must be the Bot User OAuth Token, which starts with xoxb- (the app's OAuth & Permissions page); the value set does not")
	}
	if t := c.Slack.AppToken; t != "" && !strings.HasPrefix(t, "xapp-") {
		fail(at("slack", "app_token"), "slack.app_token must be an app-level token, which starts with xapp- (Basic Information → App-Level Tokens, scope connections:write); the value set does not")
	}
	for i, ch := range c.Slack.AllowedChannels {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(ch), "#")) == "" {
			fail(nodeAt(at("slack"), "allowed_channels", i), "slack.allowed_channels[%d] is empty: list channel IDs (C…) or names without '#'", i)
		}
	}
	for i, u := range c.Slack.Admins {
		if strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(u), "@")) == "" {
			fail(nodeAt(at("slack"), "admins", i), "slack.admins[%d] is empty: list Slack user IDs (U…) or user names", i)
		}
	}
}

// checkRouteReceivers reports routes that name a receiver that does not exist.
func (c *Config) checkRouteReceivers(n *yaml.Node, path string, r *notifier.RouteConfig, names map[string]bool, fail func(*yaml.Node, string, ...any)) {
	if r.Receiver != "" && !names[r.Receiver] {
		fail(nodePath(n, "receiver"), "%s.receiver %q is not a receiver; define it under receivers:", path, r.Receiver)
	}
	for i := range r.Routes {
		child := nodeAt(n, "routes", i)
		c.checkRouteReceivers(child, fmt.Sprintf("%s.routes[%d]", path, i), &r.Routes[i], names, fail)
	}
}

// routeNode finds the node a route problem's path ("route.routes[1].matchers[0]")
// names, as far as it exists, below the route node n.
func routeNode(n *yaml.Node, path string) *yaml.Node {
	parts := strings.Split(strings.TrimPrefix(path, "route"), ".")
	for _, part := range parts {
		if part == "" {
			continue
		}
		key, index, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		next := mappingValue(n, key)
		if next == nil {
			return n
		}
		n = next
		if i, err := strconv.Atoi(index); indexed && err == nil && i < len(n.Content) {
			n = strictyaml.Resolve(n.Content[i])
		}
	}
	return n
}

// checkReceiver returns what is wrong with a receiver, in words.
func (c *Config) checkReceiver(r *Receiver) []string {
	kinds := 0
	var problems []string
	if r.Console != nil {
		kinds++
	}
	if r.Slack != nil {
		kinds++
		problems = append(problems, r.Slack.Check(c.Slack.BotToken != "")...)
	}
	if r.Webhook != nil {
		kinds++
		problems = append(problems, r.Webhook.Check()...)
	}
	if r.Alertmanager != nil {
		kinds++ // its problems name their fields: validate places them
	}
	switch {
	case kinds == 0:
		problems = append(problems, "needs a kind: console: {}, slack: {channel: …}, webhook: {url: …}, or alertmanager: {urls: […]}")
	case kinds > 1:
		problems = append(problems, "has more than one kind: give each kind its own receiver")
	}
	return problems
}

// MaxRules is how many rules a config may hold. The engine keeps the state
// and windows of every rule on every GPU and evaluates them all at each
// sample: far more rules than any fleet needs take gigabytes and seconds.
const MaxRules = 10_000

// MaxNameBytes is the longest name of a receiver or a digest: names go
// into the store's keys and every notification.
const MaxNameBytes = rules.MaxAlertNameBytes

// checkRuleCount refuses a config with more than MaxRules rules, at the
// first rule past the limit.
func (c *Config) checkRuleCount() strictyaml.Errors {
	if len(c.Rules) <= MaxRules {
		return nil
	}
	r := c.Rules[MaxRules]
	return strictyaml.Errors{&strictyaml.Error{File: r.File, Pos: r.Pos, Msg: fmt.Sprintf(
		"%d rules are more than gpuwatch evaluates (%d): every rule runs on every GPU at each sample; "+
			"merge rules that differ only in a threshold or a GPU (gpus: selects several)", len(c.Rules), MaxRules)}}
}

// ErrorAt makes a problem found after loading (by `gpuwatch check`'s
// trials) at the setting keys name, or at the section above it when the
// file leaves it out.
func (c *Config) ErrorAt(keys []string, format string, args ...any) *strictyaml.Error {
	if c.root == nil {
		return &strictyaml.Error{File: c.File, Pos: strictyaml.Pos{Line: 1, Col: 1}, Msg: fmt.Sprintf(format, args...)}
	}
	return strictyaml.Errorf(c.File, nodePath(c.root, keys...), format, args...)
}

// HostName is the name this gpuwatch gives its own host: host, or by
// default the machine's name.
func (c *Config) HostName() string {
	if c.Host != "" {
		return c.Host
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "localhost"
}

// Summary is the one-line description `gpuwatch check` prints for a valid
// config.
func (c *Config) Summary() string {
	return fmt.Sprintf("%s: ok: %s, %s, source %s every %v",
		c.File, plural.Count(len(c.Rules), "rule"), plural.Count(len(c.Receivers), "receiver"), c.Source.Type, c.Source.Interval)
}
