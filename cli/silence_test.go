package cli_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
)

// freeAddr returns a loopback address no one listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestSilenceAndOutboxCommands runs the daemon in-process and drives it
// with `gpuwatch silence` and `gpuwatch outbox` over its HTTP API.
func TestSilenceAndOutboxCommands(t *testing.T) {
	addr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "storage: {path: @DIR@/state.db}\nserver: {listen: \""+addr+"\"}\n"+
		"source: {type: sim, interval: 5s, sim: {scenario: thermal, seed: 1, speed: 1}}\nrules:\n"+hotRule)
	d := runInProcess(t, path)
	waitFor(t, &d.stderr, "HTTP API listening")

	// Flags after the matchers, as the README writes it.
	got := gpuwatch(t, "silence", "add", "alert=GPUHot", "gpu=0", "--server", addr, "--duration", "4h", "--reason", "fan repair", "--by", "alice")
	if got.code != cli.ExitOK || !strings.Contains(got.stdout, `alert="GPUHot" gpu="0" until`) {
		t.Fatalf("silence add: exit %d\nstdout: %s\nstderr: %s", got.code, got.stdout, got.stderr)
	}
	id := strings.TrimSuffix(strings.Fields(got.stdout)[1], ":")
	if got.stderr != "" {
		t.Errorf("silence add of a known alert: got stderr %q, want none", got.stderr)
	}
	if got := gpuwatch(t, "silence", "add", "alert=GPUHott", "--server", addr); got.code != cli.ExitOK ||
		!strings.Contains(got.stderr, `warning: no rule is named alert="GPUHott", so the silence mutes nothing`) {
		t.Errorf("silence add of an unknown alert: exit %d, stderr %q; want exit 0 and a warning", got.code, got.stderr)
	}

	got = gpuwatch(t, "silence", "list", "--config", path)
	for _, want := range []string{id, "active", `alert="GPUHot"`, "alice", "fan repair"} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("silence list: want %q in\n%s", want, got.stdout)
		}
	}
	if got := gpuwatch(t, "silence", "add", "--server", addr, "alert=~("); got.code != cli.ExitUser || !strings.Contains(got.stderr, "matcher") {
		t.Errorf("silence add with a bad matcher: exit %d, stderr %q; want exit 1 naming the matcher", got.code, got.stderr)
	}
	if got := gpuwatch(t, "silence", "expire", "--server", addr, id); got.code != cli.ExitOK || !strings.Contains(got.stdout, "expired") {
		t.Errorf("silence expire: exit %d stdout %q stderr %q", got.code, got.stdout, got.stderr)
	}
	if got := gpuwatch(t, "silence", "list", "--server", addr); !strings.Contains(got.stdout, "expired") {
		t.Errorf("silence list after expire: %s", got.stdout)
	}
	if got := gpuwatch(t, "silence", "expire", "--server", addr, "nosuchid"); got.code != cli.ExitUser {
		t.Errorf("expiring an unknown silence: exit %d, want %d (stderr %q)", got.code, cli.ExitUser, got.stderr)
	}
	got = gpuwatch(t, "outbox", "list", "--server", addr)
	if got.code != cli.ExitOK || !strings.Contains(got.stdout, "console") || !strings.Contains(got.stdout, "no dead letters") {
		t.Errorf("outbox list: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	if code := d.stop(); code != cli.ExitOK {
		t.Errorf("run: exit %d after cancel\n%s", code, d.stderr.String())
	}
	// Without a daemon the commands say so, as a runtime failure.
	got = gpuwatch(t, "silence", "list", "--server", addr)
	if got.code != cli.ExitRuntime || !strings.Contains(got.stderr, "is `gpuwatch run` running there?") {
		t.Errorf("silence list without a daemon: exit %d stderr %q", got.code, got.stderr)
	}
}
