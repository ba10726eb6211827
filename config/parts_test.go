package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installedConfig is a config as an installed server has it: its secrets
// come from the service's environment (/etc/gpuwatch/environment).
const installedConfig = `# /etc/gpuwatch/config.yaml
server:
  listen: 127.0.0.1:9471
  bearer_token: ${GPUWATCH_API_TOKEN}
slack:
  bot_token: ${SLACK_BOT_TOKEN}
receivers:
  - name: team
    slack: {channel: "#gpu"}
  - name: hook
    webhook: {url: "${WEBHOOK_URL}"}
route:
  receiver: team
rule_files: [rules/*.yaml]
rules:
  - alert: Hot
    when: temperature > 85
`

// TestLoadPartsResolvesOnlyWhatIsUsed: a client of the daemon (gpuwatch
// silence --config) loads the config without the daemon's environment: the
// variables of the parts it does not use are no error, nor are the rule
// files it does not read; those of the parts it uses still are.
func TestLoadPartsResolvesOnlyWhatIsUsed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(installedConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	token := func(name string) (string, bool) {
		if name == "GPUWATCH_API_TOKEN" {
			return "s3cr3t-api-token-value", true
		}
		return "", false
	}
	if _, err := Load(path, token); err == nil || !strings.Contains(err.Error(), "SLACK_BOT_TOKEN is not set") {
		t.Errorf("Load without the daemon's environment: got %v, want the unset SLACK_BOT_TOKEN", err)
	}
	cfg, err := LoadParts(path, token, PartServer)
	if err != nil {
		t.Fatalf("LoadParts(server): %v", err)
	}
	if cfg.Server.Listen != "127.0.0.1:9471" || cfg.Server.BearerToken != "s3cr3t-api-token-value" {
		t.Errorf("LoadParts(server): got server %+v, want its listen and expanded token", cfg.Server)
	}
	if len(cfg.Rules) != 0 {
		t.Errorf("LoadParts(server): got %d rules, want none read", len(cfg.Rules))
	}
	// A variable of a part used is still required, at its place.
	_, err = LoadParts(path, func(string) (string, bool) { return "", false }, PartServer)
	if err == nil || !strings.Contains(err.Error(), "config.yaml:4:17: environment variable GPUWATCH_API_TOKEN is not set") {
		t.Errorf("LoadParts(server) without the server's token: got %v, want its unset variable at 4:17", err)
	}
	// Rules: the inline one; the rule files that match nothing are a problem now.
	_, err = LoadParts(path, token, PartRules, PartRuleFiles)
	if err == nil || !strings.Contains(err.Error(), `rule_files: "rules/*.yaml" matches no file`) || strings.Contains(err.Error(), "SLACK_BOT_TOKEN") {
		t.Errorf("LoadParts(rules, rule_files): got %v, want only the rule files that match nothing", err)
	}
	cfg, err = LoadParts(path, token, PartRules)
	if err != nil || len(cfg.Rules) != 1 || cfg.Rules[0].Name != "Hot" {
		t.Errorf("LoadParts(rules): got %v, %v; want the inline rule Hot", cfg, err)
	}
}

// TestCommentsOnlyConfig: every setting is optional, so a config of
// comments only takes every default; a file with nothing in it is refused.
func TestCommentsOnlyConfig(t *testing.T) {
	cfg, err := Parse("config.yaml", []byte("# everything as it comes\n\n# (see config.example.yaml)\n"), noEnv)
	if err != nil {
		t.Fatalf("a config of comments only: %v", err)
	}
	if cfg.Source.Type != "nvml" || cfg.Route.Receiver != "console" || cfg.Server.Listen != DefaultListen {
		t.Errorf("a config of comments only: got %+v, want the defaults", cfg)
	}
	for _, empty := range []string{"", "\n  \n"} {
		if _, err := Parse("config.yaml", []byte(empty), noEnv); err == nil || !strings.Contains(err.Error(), "config.yaml:1:1: the file is empty") {
			t.Errorf("an empty config %q: got %v, want config.yaml:1:1: the file is empty", empty, err)
		}
	}
}
