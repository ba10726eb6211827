package cli_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// TestClientCommandsNeedNotTheDaemonsSecrets: on an installed server the
// daemon's secrets live in its environment (/etc/gpuwatch/environment),
// not in a user's shell. Every command that reads the config for its own
// purpose (the daemon's address, its rules, its storage) works without
// them: it resolves only the ${VAR}s of the parts it uses.
func TestClientCommandsNeedNotTheDaemonsSecrets(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, `host: installed
storage: {path: @DIR@/state.db}
server: {listen: "`+addr+`"}
source: {type: sim, interval: 5s, sim: {scenario: thermal, seed: 1, speed: 600}}
slack:
  bot_token: ${SLACK_BOT_TOKEN}
  signing_secret: ${SLACK_SIGNING_SECRET}
receivers:
  - name: team
    slack: {channel: "#gpu-alerts"}
  - name: pager
    webhook: {format: pagerduty, routing_key: "${PAGERDUTY_ROUTING_KEY}"}
route: {receiver: team}
rules:
`+hotRule)
	secrets := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-secret", "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
		"PAGERDUTY_ROUTING_KEY": "R0123456789ABCDEF0123456789ABCDE"}
	// The daemon has them, as systemd gives them to it.
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr notifiertest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"run", "--config", path}, &cli.Env{Stdout: &stdout, Stderr: &stderr,
			LookupEnv: func(name string) (string, bool) { v, ok := secrets[name]; return v, ok }})
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, &stderr, "HTTP API listening")

	// A user's shell does not.
	for _, args := range [][]string{
		{"silence", "list", "--config", path},
		{"silence", "add", "alert=GPUHot", "--config", path},
		{"outbox", "list", "--config", path},
		{"status", "--config", path},
		{"digest", "--config", path},
		{"replay", "testdata/traces/thermal.csv", "--config", path},
		{"rules", "export", "--schema", "gpuwatch", "--config", path},
	} {
		if got := gpuwatch(t, args...); got.code != cli.ExitOK {
			t.Errorf("gpuwatch %v without the daemon's environment: exit %d\n%s", args, got.code, got.stderr)
		}
	}
	// check and run read everything: they still say what is not set.
	if got := gpuwatch(t, "check", path); got.code != cli.ExitUser {
		t.Errorf("gpuwatch check without the daemon's environment: exit %d, want %d\n%s", got.code, cli.ExitUser, got.stderr)
	}
}
