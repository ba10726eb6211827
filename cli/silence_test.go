package cli_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/cli"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// freeAddr returns a loopback address no one listens on right now.
func freeAddr(t testing.TB) string {
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

// TestCommandsWithAuthentication: against a daemon with TLS, an API token
// and a basic-auth user, `gpuwatch silence`, `outbox` and `status` get in
// with the credentials of --config, of --token-file or of --user, and are
// refused, saying why, without.
func TestCommandsWithAuthentication(t *testing.T) {
	dir := t.TempDir()
	certFile, _ := testcert.Write(t, dir)
	token, password := "3b6a27bccbd5e4c0a1f9d8e7c6b5a4f3", "an admin's long password"
	for name, text := range map[string]string{"api-token": token + "\n", "password": password + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, fmt.Sprintf(`storage: {path: @DIR@/state.db}
server:
  listen: %q
  tls: {cert_file: tls.crt, key_file: tls.key}
  bearer_token_file: api-token
  basic_auth_users: {admin: %q}
source: {type: sim, interval: 5s, sim: {scenario: thermal, seed: 1, speed: 1}}
rules:
%s`, addr, hash, hotRule))
	run := startRun(t, path)
	waitFor(t, &run.stderr, "HTTP API listening")

	tokenFile, passwordFile := filepath.Join(dir, "api-token"), filepath.Join(dir, "password")
	// status shows the daemon's view once it has sampled the GPUs.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := gpuwatch(t, "status", "--server", addr, "--ca-file", certFile, "--token-file", tokenFile)
		if got.code == cli.ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status --server: no sample after 10s: exit %d\n%s", got.code, got.stderr)
		}
	}
	for _, args := range [][]string{
		{"silence", "add", "--config", path, "alert=GPUHot"},
		{"silence", "list", "--server", addr, "--ca-file", certFile, "--token-file", tokenFile},
		{"outbox", "list", "--server", "https://" + addr, "--ca-file", certFile, "--user", "admin", "--password-file", passwordFile},
		{"status", "--server", addr, "--ca-file", certFile, "--token-file", tokenFile},
		{"status", "--server", "https://" + addr, "--ca-file", certFile, "--user", "admin", "--password-file", passwordFile},
		{"status", "--config", path},
	} {
		got := gpuwatch(t, args...)
		if got.code != cli.ExitOK {
			t.Errorf("gpuwatch %v: exit %d, want 0\nstdout: %s\nstderr: %s", args, got.code, got.stdout, got.stderr)
		}
		if args[0] == "status" && !strings.Contains(got.stdout, "(the last sample of gpuwatch run at "+addr+")") {
			t.Errorf("gpuwatch %v: got\n%s\nwant the running daemon's view", args, got.stdout)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"silence", "list", "--server", addr, "--ca-file", certFile}, "this gpuwatch asks for credentials"},
		{[]string{"outbox", "list", "--server", "https://" + addr, "--token-file", tokenFile}, "its TLS certificate is not trusted"},
		{[]string{"silence", "list", "--config", path, "--user", "admin"}, "--user needs --password-file"},
		{[]string{"status", "--server", addr, "--ca-file", certFile}, "this gpuwatch asks for credentials"},
	} {
		got := gpuwatch(t, c.args...)
		if got.code == cli.ExitOK || !strings.Contains(got.stderr, c.want) {
			t.Errorf("gpuwatch %v: exit %d stderr %q, want a failure saying %q", c.args, got.code, got.stderr, c.want)
		}
		notifiertest.AssertNoSecrets(t, "stderr", got.stderr, token, password)
	}
	if code := run.stop(t); code != cli.ExitOK {
		t.Errorf("run: exit %d after cancel\n%s", code, run.stderr.String())
	}
}
