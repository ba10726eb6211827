package fleettest

import (
	"os"
	"path/filepath"
	"testing"
)

// VictoriaMetrics starts a single-node VictoriaMetrics, with flags added to
// its command line (-search.maxStalenessInterval=10s, say), and returns
// once it is ready. It keeps its data in Dir/data: Restart finds it again.
func VictoriaMetrics(t testing.TB, flags ...string) *Server {
	t.Helper()
	bin := Binary(t, "victoria-metrics")
	dir := t.TempDir()
	addr := FreeAddr(t)
	args := append([]string{
		"-storageDataPath=" + filepath.Join(dir, "data"),
		"-httpListenAddr=" + addr,
		"-loggerLevel=WARN",
	}, flags...)
	return start(t, dir, addr, bin, args...)
}

// VMAgent starts vmagent with the given scrape config (prometheus.yml's
// global and scrape_configs), remote-writing what it scrapes to writeURL
// (http://HOST:PORT/api/v1/write), and returns once it is ready. What it
// cannot send yet waits in Dir/buffer, as it would on a real host.
func VMAgent(t testing.TB, scrapeConfig, writeURL string, flags ...string) *Server {
	t.Helper()
	bin := Binary(t, "vmagent")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "scrape.yml")
	if err := os.WriteFile(cfg, []byte(scrapeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	args := append([]string{
		"-promscrape.config=" + cfg,
		"-remoteWrite.url=" + writeURL,
		"-remoteWrite.tmpDataPath=" + filepath.Join(dir, "buffer"),
		"-httpListenAddr=" + addr,
		"-loggerLevel=WARN",
	}, flags...)
	return start(t, dir, addr, bin, args...)
}

// VMAlertOptions say what vmalert evaluates, against what, and where its
// alerts go.
type VMAlertOptions struct {
	// Rules are the rule files, by name.
	Rules map[string]string
	// VictoriaMetrics is the server vmalert queries, writes its recording
	// rules' results and its alerts' state to, and restores that state
	// from.
	VictoriaMetrics string
	// Alertmanager is where its alerts go.
	Alertmanager string
	// Flags are more command-line flags.
	Flags []string
}

// VMAlert starts vmalert and returns once it is ready.
func VMAlert(t testing.TB, o VMAlertOptions) *Server {
	t.Helper()
	bin := Binary(t, "vmalert")
	dir := t.TempDir()
	addr := FreeAddr(t)
	args := []string{
		"-datasource.url=" + o.VictoriaMetrics,
		"-remoteWrite.url=" + o.VictoriaMetrics,
		"-remoteRead.url=" + o.VictoriaMetrics,
		"-notifier.url=" + o.Alertmanager,
		"-httpListenAddr=" + addr,
		"-loggerLevel=WARN",
	}
	for name, text := range o.Rules {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-rule="+path)
	}
	return start(t, dir, addr, bin, append(args, o.Flags...)...)
}
