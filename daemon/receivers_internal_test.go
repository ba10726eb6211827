package daemon

import (
	"os"
	"testing"

	"github.com/gpuwatch/gpuwatch/config"
)

// TestGeneratorURL: an alert's link back defaults to server.listen, with
// the machine's name where it listens on every interface.
func TestGeneratorURL(t *testing.T) {
	hostname, _ := os.Hostname()
	for _, c := range []struct {
		listen, host string
		tls          bool
		want         string
	}{
		{"127.0.0.1:9477", "", false, "http://127.0.0.1:9477"},
		{"gpu-hub.lab:9477", "", true, "https://gpu-hub.lab:9477"},
		{":9477", "hub-1", false, "http://hub-1:9477"},
		{"0.0.0.0:9477", "", false, "http://" + hostname + ":9477"},
		{"[::]:9477", "hub-1", true, "https://hub-1:9477"},
		{"[::1]:9477", "", false, "http://[::1]:9477"},
	} {
		cfg := &config.Config{Host: c.host, Server: config.Server{Listen: c.listen}}
		if c.tls {
			cfg.Server.TLS = &config.ServerTLS{}
		}
		if got := generatorURL(cfg); got != c.want {
			t.Errorf("listen %q, host %q, tls %v: got %q, want %q", c.listen, c.host, c.tls, got, c.want)
		}
	}
}
