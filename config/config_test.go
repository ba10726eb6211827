package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
	"github.com/gpuwatch/gpuwatch/rules"
)

// lookupFrom returns a lookup function over a fixed environment.
func lookupFrom(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

// noEnv is an environment with no variables set.
func noEnv(string) (string, bool) { return "", false }

// ruleFields is the list of rule fields unknown-field errors print.
const ruleFields = "valid fields: alert, when, for, keep_firing_for, clear_when, severity, labels, summary, description, gpus, receivers, repeat_interval"

// configFailures maps each testdata/bad/*.bad.yaml file to the exact lines
// `gpuwatch check` prints for it, in order. Lines without a file name are
// in the config file itself; the others name the rule file they are in.
var configFailures = map[string][]string{
	"syntax.bad.yaml": {
		"3:1: invalid YAML: did not find expected ',' or ']' (at or below this line; check the indentation)",
	},
	"not_a_mapping.bad.yaml": {
		"1:1: the file must be a mapping of fields, not a list",
	},
	"unknown_anchor.bad.yaml": {
		"5:13: invalid YAML: alias *console refers to no anchor: define &console before it",
	},
	// A "billion laughs" in the route tree: refused before it is decoded.
	"alias_bomb.bad.yaml": {
		"14:34: the aliases of this file make its 115 nodes stand for 19505554, more than 101150: alias *r6 alone stands for 1926473; write the values out or use fewer aliases of aliases",
	},
	// A listener the network reaches needs authentication and TLS.
	"server_open.bad.yaml": {
		"3:11: server.listen 0.0.0.0:9477 takes connections from the network, and the API has no authentication: anyone who reaches it can read process users and commands and add or expire silences; set server.bearer_token_file or server.basic_auth_users, and server.tls, or listen on 127.0.0.1",
		"3:11: server.listen 0.0.0.0:9477 takes connections from the network without TLS: passwords and tokens would cross it in clear; set server.tls.cert_file and key_file, or listen on 127.0.0.1 behind an HTTPS proxy",
	},
	"server_auth.bad.yaml": {
		"4:12: server.basic_auth_users.alice is not a bcrypt hash: make the line with `gpuwatch hash-password alice`",
		"5:17: server.bearer_token holds a token of 5 bytes, fewer than 16: make a long random one (openssl rand -hex 32)",
		"7:5: server.tls needs cert_file and key_file: the PEM certificate and its private key",
	},
	"server_token.bad.yaml": {
		"4:22: set only one of server.bearer_token and server.bearer_token_file",
	},
	"alias_cycle.bad.yaml": {
		"6:15: alias *loop is inside the value of its own anchor &loop: it would stand for an endless document; write the value out",
	},
	"unknown_field.bad.yaml": {
		`1:1: unknown field "sorce" in the file (did you mean "source"?); valid fields: host, source, storage, server, metrics, slack, receivers, route, rule_files, rules, digests, people`,
		`5:3: unknown field "listn" in server (did you mean "listen"?); valid fields: listen, tls, basic_auth_users, bearer_token, bearer_token_file, external_url, allowed_hosts, trusted_proxies`,
	},
	// metrics.per_process is a bool; the section has no other key.
	"metrics.bad.yaml": {
		`2:16: metrics.per_process must be true or false, not "maybe"`,
		`3:3: unknown field "per_users" in metrics; valid fields: per_process, pod_labels`,
	},
	"unknown_rule_field.bad.yaml": {
		`4:5: unknown field "severty" in rules[0] (did you mean "severity"?); ` + ruleFields,
	},
	// The duplicate is reported where it is met second: in the rule file,
	// naming the inline rule it repeats.
	"duplicate_rule.bad.yaml": {
		`testdata/bad/rules/dup.yaml:4:5: alert "GPUHot" is defined twice (first at testdata/bad/duplicate_rule.bad.yaml:3:5); give each rule its own name`,
	},
	"rule_file_errors.bad.yaml": {
		`testdata/bad/rules/broken.yaml:4:10: rules[0].for: "1 minute" is not a duration: write it like 30s, 5m, 1h30m or 2d`,
	},
	// Columns inside conditions map to the file for plain and quoted values.
	"cond_column.bad.yaml": {
		`3:26: when: unit "C" is a temperature but memory.used is bytes; use B, KiB, MiB, GiB, TiB`,
		`5:57: when: unit "W" is a power but temperature is degrees Celsius; use C`,
		"8:11: when must be a condition such as `memory.used_percent > 95`",
	},
	"source_type.bad.yaml": {
		`3:9: source.type "nvidia" is not one of nvml, sim, replay, prometheus`,
	},
	"prometheus.bad.yaml": {
		`1:9: source.prometheus.url is required with type prometheus: the query API of Prometheus, Thanos, Mimir or VictoriaMetrics, such as http://prometheus:9090`,
	},
	// Credentials in the URL are refused without quoting them.
	"prometheus_fields.bad.yaml": {
		`5:10: source.prometheus.url holds credentials: put them in source.prometheus.basic_auth (or bearer_token_file), where logs never show them`,
		`6:15: source.prometheus.selector at column 1: a selector starts with {, as in {cluster="a"}`,
		`7:13: source.prometheus.schema "dcgm-exporter" is not one of gpuwatch, dcgm, auto`,
		`8:14: source.prometheus.timeout 20s is longer than source.interval 15s: evaluations would wait for each other; make it shorter`,
		`10:24: source.prometheus.bearer_token_file: set only one of bearer_token and bearer_token_file`,
		`11:18: source.prometheus.compression "zstd" is not gzip or none: gzip sends a twelfth of the bytes; none spares Prometheus and the hub compressing them, for a hub beside Prometheus`,
	},
	"prometheus_auth.bad.yaml": {
		`4:10: source.prometheus.url "prometheus:9090" is not an http:// or https:// URL such as http://prometheus:9090`,
		`5:15: source.prometheus.selector at column 15: __name__ is gpuwatch's to choose (it asks for the GPU series of the schema): select by other labels, such as {job="gpu"}`,
		`7:7: source.prometheus.basic_auth: needs username`,
		`7:22: source.prometheus.basic_auth.password_file: open testdata/bad/nowhere/password: no such file or directory`,
		`9:7: source.prometheus.tls: needs both cert_file and key_file for a client certificate, or neither`,
		`9:16: source.prometheus.tls.ca_file: testdata/bad/prometheus_auth.bad.yaml holds no PEM certificate`,
	},
	"sim_scenario.bad.yaml": {
		`5:15: source.sim.scenario "leak" is not one of normal-training, memory-leak, batch-spike, idle-hog, thermal, all, creep-plateau, gpu-lost, idle-resume, leak-gappy, leak-restart, leak-slow, node8, noisy-1s, tf-grab-all, tf-prealloc, thermal-cycle, leak-epoch, leak-tiny, leak-notebook, leak-peaks, leak-nearfull, vllm-serve, shared-node, slurm-node, mig-slice-leak, mig-mixed, timeslice-leak, model-reload, frag-creep, oom-retry-loop, day-night-inference, slow-leak-80gb, hot-oscillation, ecc-row-remap, power-brake, pcie-degraded, xid-storm, nvlink-errors`,
		`6:12: source.sim.speed must be 0 (as fast as possible) or more`,
	},
	// An agent's node is a node name, listed no more often than every
	// 10s; pod label keys a hub's series cannot tell apart are named.
	"kubernetes.bad.yaml": {
		`3:22: source.kubernetes.node "GPU_Node_1" is not a node name: lower-case letters, digits, '-' and '.'`,
		`3:43: source.kubernetes.refresh 2s is too short: every node's agent lists its pods that often; use 10s or more (default 1m0s)`,
		`6:30: pod labels "app-kubernetes.io/owner" and "app.kubernetes.io/owner" are both app_kubernetes_io_owner in a series (dcgm-exporter's, or label_app_kubernetes_io_owner in gpuwatch's), where a label name has letters, digits and '_' alone: a hub cannot tell them apart; read one of them`,
		`8:16: people.pod_labels: "owner=x" is not a Kubernetes label key: a name of letters, digits, '-', '_' and '.' (at most 63), with an optional DNS prefix and '/', like owner or example.org/owner`,
	},
	"metrics_pod_labels.bad.yaml": {
		`2:36: metrics.pod_labels[0]: "team name" is not a Kubernetes label key: a name of letters, digits, '-', '_' and '.' (at most 63), with an optional DNS prefix and '/', like owner or example.org/owner`,
		`2:56: metrics.pod_labels[2]: "owner" is listed twice`,
	},
	"kubernetes_hub.bad.yaml": {
		`3:22: source.kubernetes lists the pods of an agent's node for the processes NVML reads: it needs source.type nvml, not sim; a hub reads pod labels from its series, dcgm-exporter's or the agents' (metrics.pod_labels; docs/people.md)`,
	},
	// Mappings' values (emails, perhaps) are never quoted; a route that
	// tells owners must reach a Slack receiver with the bot token.
	"people.bad.yaml": {
		`7:10: people.email knows only the placeholder {user}: "{user}@example.org"`,
		`10:10: people.users.bob is neither a Slack user ID (U0123ABCD: Slack profile → ⋯ → Copy member ID) nor an email`,
		`12:30: people.groups[0].leads[0] is neither a Slack user ID (U0123ABCD: Slack profile → ⋯ → Copy member ID) nor an email`,
		`12:49: people.groups[0].members[0]: "job:4242" is not an identity: write a Unix user (alice), namespace:NAME, slurm_account:NAME or pod_label:KEY=VALUE`,
		`13:16: people.quiet_hours "10pm-7am" is not a span of the day: write it like 22:00-08:00`,
		`14:22: people.digest.receiver "hook" must be a Slack receiver with a channel (and slack.bot_token): personal digests are direct messages`,
		`14:37: people.digest.default "hourly" is not weekly, daily or off`,
		`17:18: route.owners.tell: "sms" is not dm, mention, both or none`,
		`17:36: route.owners.escalate_to is neither a Slack user ID (U0123ABCD: Slack profile → ⋯ → Copy member ID) nor an email`,
		`20:17: route.routes[0] tells owners through receiver "hook", which cannot: owners are told by a Slack receiver with a channel and slack.bot_token; give this route owners: {tell: none}, or route it to such a receiver`,
		`22:12: digest "people:weekly": names starting "people:" are the personal digests' (people.digest): name it otherwise`,
	},
	"replay_no_file.bad.yaml": {
		`4:5: source.replay.file is required with type replay: the nvidia-smi CSV log to replay`,
	},
	// A headerless log's columns and a total without its unit.
	"replay_options.bad.yaml": {
		`5:14: source.replay.columns "foo,bar": none of these is a column gpuwatch reads; name the --query-gpu fields, as in timestamp,index,memory.used,memory.total`,
		`6:19: source.replay.memory_total "80": want an amount with its unit, as in 80GiB or 24576MiB`,
	},
	"replay_no_section.bad.yaml": {
		`2:3: source.replay.file is required with type replay: the nvidia-smi CSV log to replay`,
	},
	"server_listen.bad.yaml": {
		`3:13: source.interval 11m0s is too long for a simulation: it steps over the scenarios' events; use at most 10m0s`,
		`5:11: server.listen "9477" is not host:port: write it like 127.0.0.1:9477 (or :9477 for every interface)`,
	},
	"tab.bad.yaml": {
		"2:1: invalid YAML: a tab indents this line: YAML is indented with spaces only; replace the tab with spaces",
	},
	"interval_short.bad.yaml": {
		`3:13: source.interval 10ms is too short: sample at most every 100ms (5s is a good default)`,
	},
	"route_receiver.bad.yaml": {
		`6:13: route.receiver "slack" is not a receiver; define it under receivers:`,
	},
	"route_missing.bad.yaml": {
		`1:1: route.receiver: the root route needs a receiver: the one that gets alerts no child route takes`,
	},
	"rule_receiver.bad.yaml": {
		`7:5: alert "GPUHot" sends to receiver "pager", which is not defined under receivers:`,
	},
	"receiver_kind.bad.yaml": {
		`2:5: receiver "console" needs a kind: console: {}, slack: {channel: …}, webhook: {url: …}, or alertmanager: {urls: […]}`,
		`3:5: receivers[1] needs the field "name"`,
	},
	// Tokens of the wrong kind are named, never quoted.
	"slack_tokens.bad.yaml": {
		"2:14: slack.bot_token must be the Bot User OAuth Token, which starts with xoxb- (the app's OAuth & Permissions page); the value set does not",
		"3:14: slack.app_token must be an app-level token, which starts with xapp- (Basic Information → App-Level Tokens, scope connections:write); the value set does not",
		"4:30: slack.allowed_channels[1] is empty: list channel IDs (C…) or names without '#'",
		"5:12: slack.admins[0] is empty: list Slack user IDs (U…) or user names",
	},
	// Each problem of an alertmanager receiver points at its own field;
	// the token is never quoted.
	"alertmanager.bad.yaml": {
		`4:32: receiver "am" alertmanager.urls[1]: must start with http:// or https://, not "ftp:"`,
		`4:46: receiver "am" alertmanager.urls[2]: is urls[0] again: list each Alertmanager once`,
		`4:64: receiver "am" alertmanager.urls[3]: has a query or fragment: give the Alertmanager's base URL; gpuwatch posts to /api/v2/alerts below it`,
		`5:24: receiver "am" alertmanager.resend_interval: 100ms is shorter than 1s: Alertmanager needs a firing alert again only within minutes; 1m, as Prometheus sends, is a good default`,
		`7:19: receiver "am" alertmanager.basic_auth: set only one of a bearer token and basic_auth: a request carries one Authorization header`,
		`7:19: receiver "am" alertmanager.basic_auth: needs password or password_file`,
		`8:12: receiver "am" alertmanager.tls: needs both cert_file and key_file for a client certificate, or neither`,
		`8:22: receiver "am" alertmanager.tls.ca_file: open testdata/bad/no-such-ca.pem: no such file or directory`,
		`9:22: receiver "am" alertmanager.generator_url: must start with http:// or https://, not "gpuwatch:"`,
		`11:19: receiver "empty" alertmanager.urls: list at least one Alertmanager, such as [http://alertmanager:9093]; every instance of an HA cluster`,
	},
	"duplicate_receiver.bad.yaml": {
		`4:5: receiver "console" is defined twice`,
	},
	"unset_env.bad.yaml": {
		`1:7: environment variable GPUWATCH_HOST is not set: set it, or write ${GPUWATCH_HOST:-default}`,
		`3:9: environment variable STATE_DIR is not set: set it, or write ${STATE_DIR:-default}`,
	},
	"bad_env.bad.yaml": {
		`1:7: ${1HOST} is not a valid environment variable name`,
		`3:9: unterminated ${ in "${STATE_DIR": write ${NAME}`,
		`5:11: ${} is not a valid environment variable name`,
	},
	"rule_files_none.bad.yaml": {
		`3:5: rule_files: "nowhere/*.yaml" matches no file (paths are relative to testdata/bad)`,
		`4:5: rule_files: "rules/[.yaml" is not a valid glob: syntax error in pattern`,
	},
	"rules_not_list.bad.yaml": {
		"2:3: rules must be a list of rules, each starting with `- alert: Name`",
	},
	"wrong_type.bad.yaml": {
		`2:13: source.interval must be a duration, not a list`,
		`4:11: source.sim.seed must be a whole number of 0 or more, not "-1"`,
		`5:12: source.sim.speed must be a number, not "fast"`,
		`6:7: host must be a string, not a mapping`,
		`7:13: rule_files must be a list, not "rules/dup.yaml"`,
	},
	// One file, several problems: all reported at once, in file order,
	// whichever stage (decoding, rules, validation) found them.
	"many.bad.yaml": {
		`5:15: source.sim.scenario "leaky" is not one of normal-training, memory-leak, batch-spike, idle-hog, thermal, all, creep-plateau, gpu-lost, idle-resume, leak-gappy, leak-restart, leak-slow, node8, noisy-1s, tf-grab-all, tf-prealloc, thermal-cycle, leak-epoch, leak-tiny, leak-notebook, leak-peaks, leak-nearfull, vllm-serve, shared-node, slurm-node, mig-slice-leak, mig-mixed, timeslice-leak, model-reload, frag-creep, oom-retry-loop, day-night-inference, slow-leak-80gb, hot-oscillation, ecc-row-remap, power-brake, pcie-degraded, xid-storm, nvlink-errors`,
		`6:3: unknown field "intervall" in source (did you mean "interval"?); valid fields: type, interval, sim, replay, prometheus, kubernetes`,
		`10:5: receiver "console" is defined twice`,
		`13:13: route.receiver "pager" is not a receiver; define it under receivers:`,
		`16:28: when: unit "%" is a percentage but temperature is degrees Celsius; use C`,
		`17:15: severity "urgent" is not one of info, warning, critical`,
		`18:5: alert "GPUIdle" sends to receiver "ops", which is not defined under receivers:`,
	},
}

// positionRE matches the FILE:LINE:COL: prefix every problem carries.
var positionRE = regexp.MustCompile(`^[^:]*:[1-9]\d*:[1-9]\d*: `)

func TestLoadFailure(t *testing.T) {
	env := lookupFrom(map[string]string{"LISTEN": "127.0.0.1:9477"})
	for name, want := range configFailures {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", name)
			want := slices.Clone(want)
			for i, line := range want {
				if !strings.HasPrefix(line, "testdata/") {
					want[i] = path + ":" + line
				}
			}
			_, err := Load(path, env)
			if err == nil {
				t.Fatalf("Load(%s): got no error, want %d", path, len(want))
			}
			got := strings.Split(err.Error(), "\n")
			if !slices.Equal(got, want) {
				t.Errorf("Load(%s): got errors\n%s\nwant\n%s", path, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, line := range got {
				if !positionRE.MatchString(line) {
					t.Errorf("error %q: got no FILE:LINE:COL prefix, want one", line)
				}
			}
		})
	}
}

// TestEveryBadConfigIsChecked keeps the table and testdata in step.
func TestEveryBadConfigIsChecked(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(configFailures) {
		t.Errorf("got %d testdata/bad/*.bad.yaml files, want %d (one per table entry)", len(files), len(configFailures))
	}
	for _, f := range files {
		if _, ok := configFailures[filepath.Base(f)]; !ok {
			t.Errorf("%s: got no entry in configFailures, want one", f)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such.yaml", noEnv)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "read config: ") {
		t.Errorf("Load(missing): got %v, want a \"read config: \" error wrapping fs.ErrNotExist", err)
	}
}

func TestRuleFileThatIsAFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rules.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gpuwatch.yaml")
	_, err := Parse(path, []byte("rule_files:\n  - rules.yaml\n"), noEnv)
	want := path + ":2:5: rule_files: read rule file: " + filepath.Join(dir, "rules.yaml") + " is not a regular file but a folder: name a YAML file"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func ruleNames(rs []*rules.Rule) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return names
}

// TestExampleConfig loads the config.example.yaml users copy: it must stay
// valid and say what the README says it does.
func TestExampleConfig(t *testing.T) {
	c, err := Load("../config.example.yaml", noEnv)
	if err != nil {
		t.Fatalf("Load(config.example.yaml): %v", err)
	}
	wantRules := []string{"GPUMemoryNearFull", "GPUMemoryLeak", "GPUOutOfMemorySoon", "GPUMemoryFillingFast", "ProcessMemoryLeak", "GPUOutOfMemoryLoop", "GPUIdleButHeld", "GPUHot", "GPULost",
		"GPUMemoryUncorrectable", "GPURowRemapFailed", "GPURowRemapPending", "GPUHardwareSlowdown", "GPUPCIeLinkDegraded", "GPUNVLinkErrors", "GPUFanStopped", "GPUHardwareXID", "GPUApplicationXIDs"}
	if got := ruleNames(c.Rules); !slices.Equal(got, wantRules) {
		t.Errorf("rules: got %v, want %v", got, wantRules)
	}
	want := Source{Type: "nvml", Interval: 5 * time.Second, Sim: SimSource{Scenario: "all", Seed: 1, Speed: 1}}
	if c.Source != want {
		t.Errorf("source: got %+v, want %+v", c.Source, want)
	}
	if c.Storage.Path != DefaultStorage(noEnv) || c.Server.Listen != DefaultListen {
		t.Errorf("storage, server: got %q %q, want %q %q", c.Storage.Path, c.Server.Listen, DefaultStorage(noEnv), DefaultListen)
	}
	if len(c.Receivers) != 1 || c.Receivers[0].Name != "console" || c.Receivers[0].Console == nil {
		t.Errorf("receivers: got %+v, want one console receiver", c.Receivers)
	}
	if c.Route.Receiver != "console" || c.Route.RepeatInterval == nil || *c.Route.RepeatInterval != 4*time.Hour ||
		c.Route.GroupWait == nil || *c.Route.GroupWait != 10*time.Second {
		t.Errorf("route: got %+v, want receiver console, group_wait 10s, repeat_interval 4h", c.Route)
	}
	if got, want := c.Summary(), "../config.example.yaml: ok: 18 rules, 1 receiver, source nvml every 5s"; got != want {
		t.Errorf("Summary: got %q, want %q", got, want)
	}
}

// check is one setting of a loaded config and the value it should have.
type check struct {
	what      string
	got, want any
}

func verify(t *testing.T, checks []check) {
	t.Helper()
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load("testdata/good/minimal.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	checks := []check{
		{"source.type", c.Source.Type, "nvml"},
		{"source.interval", c.Source.Interval, DefaultInterval},
		{"source.sim.scenario", c.Source.Sim.Scenario, "all"},
		{"storage.path", c.Storage.Path, DefaultStorage(noEnv)},
		{"server.listen", c.Server.Listen, DefaultListen},
		{"route.receiver", c.Route.Receiver, "console"},
		{"receivers", len(c.Receivers), 1},
		{"receivers[0].name", c.Receivers[0].Name, "console"},
		{"receivers[0].console", c.Receivers[0].Console != nil, true},
		{"host", c.Host, ""},
		{"rules", len(c.Rules), 1},
		{"metrics.per_process", c.Metrics.PerProcess, false},
	}
	verify(t, checks)
}

// TestMetricsPerProcess: the per-process series are opt-in.
func TestMetricsPerProcess(t *testing.T) {
	for text, want := range map[string]bool{"metrics: {per_process: true}\n": true, "metrics: {per_process: false}\n": false, "metrics:\n": false} {
		c, err := Parse("c.yaml", []byte(text), noEnv)
		if err != nil {
			t.Errorf("Parse(%q): %v", text, err)
			continue
		}
		if c.Metrics.PerProcess != want {
			t.Errorf("Parse(%q): got metrics.per_process %v, want %v", text, c.Metrics.PerProcess, want)
		}
	}
}

// TestEmptySections checks that a section written but left empty behaves
// as if it were left out.
func TestEmptySections(t *testing.T) {
	for _, text := range []string{
		"source:\nstorage:\nserver:\nroute:\nrules:\nrule_files:\n",
		"source: {}\nrules: []\nrule_files: []\n",
		"host: ~\n",
	} {
		c, err := Parse("c.yaml", []byte(text), noEnv)
		if err != nil {
			t.Errorf("Parse(%q): %v", text, err)
			continue
		}
		if c.Source.Type != "nvml" || c.Route.Receiver != "console" || len(c.Rules) != 0 {
			t.Errorf("Parse(%q): got source %q receiver %q %d rules, want the defaults", text, c.Source.Type, c.Route.Receiver, len(c.Rules))
		}
	}
}

func TestRuleFilesRelativeToConfig(t *testing.T) {
	c, err := Load("testdata/good/rule_files.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"Inline", "FromA", "FromB1", "FromB2", "FromExtra"}
	if got := ruleNames(c.Rules); !slices.Equal(got, wantNames) {
		t.Errorf("rules: got %v, want %v (inline first, then each pattern's files in order)", got, wantNames)
	}
	wantFiles := []string{
		"testdata/good/rule_files.yaml", "testdata/good/rules/a.yaml", "testdata/good/rules/b.yaml",
		"testdata/good/rules/b.yaml", "testdata/good/extra/one.yaml",
	}
	for i, r := range c.Rules {
		if r.File != wantFiles[i] {
			t.Errorf("%s: got file %q, want %q", r.Name, r.File, wantFiles[i])
		}
	}
}

func TestRuleFilesAbsolute(t *testing.T) {
	abs, err := filepath.Abs("testdata/good/rules/a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The config lives elsewhere; an absolute pattern ignores its folder.
	c, err := Parse(filepath.Join(t.TempDir(), "c.yaml"), []byte("rule_files: ['"+abs+"']\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := ruleNames(c.Rules); !slices.Equal(got, []string{"FromA"}) {
		t.Errorf("got rules %v, want [FromA]", got)
	}
}

func TestEnvExpansion(t *testing.T) {
	env := lookupFrom(map[string]string{
		"GPUWATCH_HOST": "gpu-7",
		"SEED":          "42",
		"INTERVAL":      "", // set but empty: the default applies
		"PORT":          "9000",
	})
	c, err := Load("testdata/good/env.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	checks := []check{
		{"host", c.Host, "gpu-7"},
		{"source.type", c.Source.Type, "sim"},
		{"source.interval", c.Source.Interval, 2 * time.Second},
		{"source.sim.scenario", c.Source.Sim.Scenario, "memory-leak"},
		{"source.sim.seed", c.Source.Sim.Seed, uint64(42)},
		{"storage.path", c.Storage.Path, "/var/lib/gpuwatch/state.db"},
		{"server.listen", c.Server.Listen, "127.0.0.1:9000"},
	}
	verify(t, checks)
	var buf strings.Builder
	if err := c.Rules[0].Summary.Execute(&buf, rules.TemplateData{}); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "costs $5 an hour, USD; $x stays"; got != want {
		t.Errorf("summary: got %q, want %q", got, want)
	}
}

func TestAnchorsAndAliases(t *testing.T) {
	c, err := Load("testdata/good/anchors.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source.Interval != time.Second || c.Route.GroupWait == nil || *c.Route.GroupWait != time.Second || c.Route.Receiver != "console" {
		t.Errorf("got interval %v group_wait %v receiver %q, want 1s 1s console", c.Source.Interval, c.Route.GroupWait, c.Route.Receiver)
	}
	if len(c.Rules) != 2 {
		t.Fatalf("got %d rules, want 2", len(c.Rules))
	}
	for _, r := range c.Rules {
		if r.When.String() != "temperature > 85" || r.Labels["team"] != "ml" {
			t.Errorf("%s: got when %q labels %v, want the anchored ones", r.Name, r.When, r.Labels)
		}
	}
	if got := c.Rules[0].Receivers; !slices.Equal(got, []string{"console"}) {
		t.Errorf("HotA receivers: got %v, want [console]", got)
	}
}

// TestSecretsStayOutOfErrors: an error that quotes a value expanded from
// the environment shows the variable, not its (secret) value.
func TestSecretsStayOutOfErrors(t *testing.T) {
	const secret = "xoxb-1234-5678-abcdefgh"
	env := lookupFrom(map[string]string{"SLACK_BOT_TOKEN": secret, "TYPE": "sim"})
	text := "host: [\"${SLACK_BOT_TOKEN}\"]\nsource:\n  type: ${SLACK_BOT_TOKEN}\nreceivers:\n  - name: ${SLACK_BOT_TOKEN}\n"
	_, err := Parse("c.yaml", []byte(text), env)
	if err == nil {
		t.Fatal("got no error, want some")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("got errors quoting the secret:\n%v", err)
	}
	want := `c.yaml:3:9: source.type "${SLACK_BOT_TOKEN}" is not one of nvml, sim, replay, prometheus`
	if !slices.Contains(strings.Split(err.Error(), "\n"), want) {
		t.Errorf("got errors\n%v\nwant among them\n%s", err, want)
	}
}

func TestErrorsAreStrictyamlErrors(t *testing.T) {
	_, err := Load("testdata/bad/many.bad.yaml", noEnv)
	var es strictyaml.Errors
	if !errors.As(err, &es) || len(es) != len(configFailures["many.bad.yaml"]) {
		t.Fatalf("got %T with %d problems, want strictyaml.Errors with %d", err, len(es), len(configFailures["many.bad.yaml"]))
	}
	var pe *strictyaml.Error
	if !errors.As(err, &pe) || pe.Line != 5 || pe.Col != 15 {
		t.Errorf("errors.As(*strictyaml.Error): got %v, want the first problem at 5:15", pe)
	}
}

// FuzzParseConfig feeds Parse arbitrary bytes with an environment that
// knows a couple of variables: it must never panic, every problem must carry
// a position, no error may show the secret, and a config that parses must be
// one the daemon can run.
func FuzzParseConfig(f *testing.F) {
	// testdata/fuzz/FuzzParseConfig holds the example config and every
	// testdata file as seeds; these add a few odd cases.
	for _, s := range []string{
		"", "~", "host: ${HOST}", "host: ${TOKEN}\nsource: {type: ${TOKEN}}", "rule_files: [r.yaml, r.yaml]",
		"rule_files: ['*']", "receivers: [{name: a, console: ~}]\nroute: {receiver: a}", "source: &s {sim: *s}",
		"rules: [{alert: A, when: temperature > 1, receivers: [x]}]", "server: {listen: \"$${x}\"}",
		"source: {kubernetes: {node: ${HOST}, refresh: 30s}}\nmetrics: {per_process: true, pod_labels: [owner, a.b/c]}\npeople: {pod_labels: {a-b/c: {x: U0X}}}",
	} {
		f.Add([]byte(s))
	}
	const secret = "xoxb-fuzz-secret-token"
	env := lookupFrom(map[string]string{"HOST": "gpu-1", "TOKEN": secret})
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.yaml"), []byte("rules:\n  - alert: FromFile\n    when: temperature > 85\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	file := filepath.Join(dir, "gpuwatch.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if patterns := ruleFilePatterns(file, data, env); slices.ContainsFunc(patterns, func(p string) bool {
			return strings.ContainsAny(p, "/\\")
		}) {
			t.Skip("rule_files outside the test folder (it could name /dev/stdin)")
		}
		c, err := Parse(file, data, env)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !positionRE.MatchString(line) && !strings.HasPrefix(line, "read config") {
					t.Fatalf("Parse(%q): got problem %q, want FILE:LINE:COL: message", data, line)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("Parse(%q): got an error showing the secret:\n%v", data, err)
			}
			return
		}
		names := map[string]bool{}
		for _, r := range c.Receivers {
			names[r.Name] = true
		}
		if !names[c.Route.Receiver] || c.Source.Interval < 100*time.Millisecond || c.Storage.Path == "" || c.Server.Listen == "" {
			t.Fatalf("Parse(%q): got an unusable config %+v", data, c)
		}
		for _, r := range c.Rules {
			if r.Name == "" || r.When == nil {
				t.Fatalf("Parse(%q): got incomplete rule %+v", data, r)
			}
		}
	})
}

// ruleFilePatterns returns the rule_files of a config as Parse sees them, so
// the fuzzer can keep away from patterns that reach outside its folder.
func ruleFilePatterns(file string, data []byte, env func(string) (string, bool)) []string {
	root, err := strictyaml.Parse(file, data)
	if err != nil {
		return nil
	}
	if errs, _ := expandEnv(file, []*yaml.Node{root}, env); len(errs) > 0 {
		return nil
	}
	var y fileYAML
	strictyaml.Decode(file, root, &y)
	return y.RuleFiles
}

func BenchmarkLoadExample(b *testing.B) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("config.example.yaml", data, noEnv); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRouteZeroGroupWaitSendsAtOnce(t *testing.T) {
	c, err := Parse("route.yaml", []byte("receivers: [{name: console, console: {}}]\nroute: {receiver: console, group_wait: 0s, routes: [{receiver: console, matchers: [gpu=1]}]}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Route.GroupWait == nil || *c.Route.GroupWait != 0 || c.Route.Routes[0].GroupWait != nil {
		t.Errorf("group_wait: got root %v child %v, want an explicit 0 at the root and nothing (inherit) in the child", c.Route.GroupWait, c.Route.Routes[0].GroupWait)
	}
}

// TestParseRefusesTooManyRules: more than MaxRules rules are refused at
// the first rule past the limit, in check and on reload alike.
func TestParseRefusesTooManyRules(t *testing.T) {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range MaxRules + 1 {
		fmt.Fprintf(&b, "  - {alert: Hot%d, when: temperature > 85}\n", i)
	}
	_, err := Parse("many.yaml", []byte(b.String()), noEnv)
	want := fmt.Sprintf("many.yaml:%d:5: %d rules are more than gpuwatch evaluates (%d)", MaxRules+2, MaxRules+1, MaxRules)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Parse of %d rules: got %v, want %s…", MaxRules+1, err, want)
	}
}

// TestParseServerAuth: a listener on every interface with TLS and each
// kind of authentication is valid; its files are found beside the config;
// the token is read from its file.
func TestParseServerAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "api-token"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret-password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`server:
  listen: 0.0.0.0:9477
  tls: {cert_file: %s, key_file: %s}
  basic_auth_users:
    alice: %s
  bearer_token_file: api-token
`, filepath.Base(certFile), filepath.Base(keyFile), hash)
	c, err := Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte(text), noEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if !c.Server.Authenticated() || c.Server.TLS.CertFile != certFile || c.Server.BearerTokenFile != filepath.Join(dir, "api-token") {
		t.Errorf("server: got %+v, want authentication, and files beside the config", c.Server)
	}
	if token, err := c.Server.Token(); err != nil || token != "0123456789abcdef0123456789abcdef" {
		t.Errorf("Token: got %q, %v; want the file's token without its newline", token, err)
	}
	if _, err := c.Server.LoadCertificate(); err != nil {
		t.Errorf("LoadCertificate: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:9477": true, "[::1]:9477": true, "localhost:9477": true, "127.0.0.2:1": true,
		"0.0.0.0:9477": false, ":9477": false, "[::]:9477": false, "10.0.0.5:9477": false, "gpu-node:9477": false, "9477": false,
	} {
		if got := IsLoopback(listen); got != want {
			t.Errorf("IsLoopback(%q): got %v, want %v", listen, got, want)
		}
	}
}

func TestWarnings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("slack:\n  signing_secret: s\n  admins: [U0123ABCD, \"@root\", W0BOT]\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Warnings()
	if len(got) != 1 || !strings.HasPrefix(got[0], `c.yaml: slack.admins lists "root", a user name`) {
		t.Errorf("got warnings %q, want one about root", got)
	}
}

// TestAlertmanagerReceiver: an alertmanager receiver loads, its files
// relative to the config file, as the server's are.
func TestAlertmanagerReceiver(t *testing.T) {
	dir := t.TempDir()
	cert, key := testcert.Write(t, dir)
	for name, text := range map[string]string{"token": "am-token\n", "password": "am-password\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	text := fmt.Sprintf(`receivers:
  - name: am
    alertmanager:
      urls: [http://am-0:9093, http://am-1:9093/alertmanager]
      resend_interval: 30s
      bearer_token_file: token
      tls: {ca_file: %s, cert_file: tls.crt, key_file: tls.key}
  - name: am-basic
    alertmanager:
      urls: [https://am:9093]
      basic_auth: {username: gpuwatch, password_file: password}
route:
  receiver: am
`, filepath.Base(cert))
	path := filepath.Join(dir, "gpuwatch.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	am, basic := c.Receivers[0].Alertmanager, c.Receivers[1].Alertmanager
	if am == nil || basic == nil {
		t.Fatalf("got receivers %+v, want two alertmanager ones", c.Receivers)
	}
	got := []string{am.BearerTokenFile, am.TLS.CAFile, am.TLS.CertFile, am.TLS.KeyFile, basic.BasicAuth.PasswordFile}
	want := []string{filepath.Join(dir, "token"), cert, cert, key, filepath.Join(dir, "password")}
	if !slices.Equal(got, want) || am.ResendInterval != 30*time.Second || len(am.URLs) != 2 {
		t.Errorf("got files %q, resend_interval %v, urls %q; want files %q beside the config, 30s and both URLs",
			got, am.ResendInterval, am.URLs, want)
	}
}

// TestLoadRefusesWhatIsNotAConfig: a config or rule file that is not a
// regular file (a device, a FIFO) or is over 16 MiB is refused at once,
// saying what it is, without reading it: /dev/zero would fill the memory,
// a FIFO would wait for a writer for ever.
func TestLoadRefusesWhatIsNotAConfig(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(strictyaml.MaxFileSize + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct{ path, want string }{
		{"/dev/zero", "/dev/zero is not a regular file but a character device"},
		{fifo, fifo + " is not a regular file but a named pipe (FIFO)"},
		{big, big + " has 16777217 bytes, more than the 16 MiB a config or rule file may have"},
	} {
		if _, err := Load(c.path, noEnv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%s): %v, want %q", c.path, err, c.want)
		}
		_, err := Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte("rule_files: ["+c.path+"]\n"), noEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rule_files: [%s]: %v, want %q", c.path, err, c.want)
		}
	}
}

// TestInvalidUTF8Position: a byte that is not UTF-8 is reported where it
// is, not at 1:1.
func TestInvalidUTF8Position(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	_, err := Parse(path, []byte("source: {type: sim}\nhost: caf\xe9-1\n"), noEnv)
	want := path + ":2:10: invalid UTF-8 (byte 0xe9)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s…", err, want)
	}
}
