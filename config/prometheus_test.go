package config

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
)

func TestPrometheusSourceDefaults(t *testing.T) {
	env := lookupFrom(map[string]string{"PROMETHEUS_PASSWORD": "correct horse battery staple"})
	c, err := Load("testdata/good/prometheus.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Source.Prometheus
	if c.Source.Interval != DefaultPrometheusInterval || p.Timeout != DefaultPrometheusTimeout || p.Schema != "auto" {
		t.Errorf("interval %v, timeout %v, schema %q: want the defaults %v, %v, auto", c.Source.Interval, p.Timeout, p.Schema,
			DefaultPrometheusInterval, DefaultPrometheusTimeout)
	}
	opts, err := c.PrometheusOptions()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := opts.Selector.String(), `{cluster="a",job=~"gpuwatch|dcgm-exporter"}`; got != want || opts.Schema != prometheus.SchemaAuto {
		t.Errorf("selector %s schema %s, want %s auto", got, opts.Schema, want)
	}
	if s := opts.Secrets(); !slices.Contains(s, "correct horse battery staple") || slices.Contains(s, "") {
		t.Errorf("secrets %q, want the password (and what is made of it), no empty one", s)
	}
}

// TestPrometheusClient calls a TLS server that wants credentials with
// each kind the config takes, over real HTTPS: the CA file makes its
// certificate trusted, and a rotated token file is read again.
func TestPrometheusClient(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	tokenFile := filepath.Join(dir, "token")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tokenFile, "first-token\n")
	write(filepath.Join(dir, "password"), "pw-from-file")
	for _, tc := range []struct {
		name, section string
		want          []string
		rotate        bool
	}{
		{"none", "", []string{"", ""}, false},
		{"bearer token", "bearer_token: inline-token", []string{"Bearer inline-token", "Bearer inline-token"}, false},
		{"token file, rotated", "bearer_token_file: token", []string{"Bearer first-token", "Bearer second-token"}, true},
		{"basic auth", "basic_auth: {username: hub, password_file: password}", []string{"Basic aHViOnB3LWZyb20tZmlsZQ==", "Basic aHViOnB3LWZyb20tZmlsZQ=="}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			text := "source:\n  type: prometheus\n  prometheus:\n    url: " + srv.URL + "\n    tls: {ca_file: " + filepath.Base(certFile) + "}\n"
			if tc.section != "" {
				text += "    " + tc.section + "\n"
			}
			c, err := Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte(text+"storage: {path: "+filepath.Join(dir, "db")+"}\n"), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := c.PrometheusOptions()
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if i == 1 && tc.rotate {
					write(tokenFile, "second-token")
				}
				resp, err := opts.Client.Get(srv.URL + "/api/v1/query")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				resp.Body.Close()
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("the server got Authorization %q, want %q", got, tc.want)
			}
		})
	}
	// Without the CA, the self-signed certificate is not trusted.
	c, err := Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte("source:\n  type: prometheus\n  prometheus: {url: '"+srv.URL+"'}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.PrometheusOptions()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opts.Client.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without ca_file: got %v, want a certificate error", err)
	}
}

// TestPrometheusSecretsNeverQuoted: a password or token never appears in
// a problem, even where the setting around it is wrong.
func TestPrometheusSecretsNeverQuoted(t *testing.T) {
	const secret = "hunter2-very-secret"
	for _, text := range []string{
		"prometheus: {url: 'http://u:" + secret + "@prom:9090'}",
		"prometheus: {url: 'http//u:" + secret + "@prom:9090'}",
		"prometheus: {url: 'http://prom:9090', bearer_token: " + secret + ", basic_auth: {username: u, password: " + secret + "}}",
		"prometheus: {url: 'http://prom:9090', basic_auth: {password: " + secret + "}}",
	} {
		_, err := Parse("c.yaml", []byte("source:\n  type: prometheus\n  "+text+"\n"), noEnv)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: got %v, want a problem without the secret", text, err)
		}
	}
}

func TestPrometheusPlainHTTPWarning(t *testing.T) {
	for url, warn := range map[string]bool{"http://prom.example.net:9090": true, "https://prom.example.net:9090": false, "http://127.0.0.1:9090": false} {
		c, err := Parse("c.yaml", []byte("source:\n  type: prometheus\n  prometheus: {url: '"+url+"', bearer_token: t0ken}\n"), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(c.Warnings()) == 1; got != warn {
			t.Errorf("%s: warnings %q, want a warning %v", url, c.Warnings(), warn)
		}
	}
}

// TestDefaultsFollowWhatIsSet: a default the user did not write never
// makes check refuse the config: a prometheus source evaluated every 2s
// waits at most 2s for a query, and a sim source alone runs on the wall
// clock (gpuwatch demo is where time runs fast).
func TestDefaultsFollowWhatIsSet(t *testing.T) {
	tests := []struct {
		name, text string
		check      func(c *Config) string
	}{
		{"prometheus timeout under a short interval", "source:\n  type: prometheus\n  interval: 2s\n  prometheus: {url: http://127.0.0.1:9090}\n",
			func(c *Config) string {
				if c.Source.Prometheus.Timeout != 2*time.Second {
					return fmt.Sprintf("timeout %v, want 2s, the interval", c.Source.Prometheus.Timeout)
				}
				return ""
			}},
		{"prometheus timeout with the default interval", "source:\n  type: prometheus\n  prometheus: {url: http://127.0.0.1:9090}\n",
			func(c *Config) string {
				if c.Source.Prometheus.Timeout != DefaultPrometheusTimeout {
					return fmt.Sprintf("timeout %v, want %v", c.Source.Prometheus.Timeout, DefaultPrometheusTimeout)
				}
				return ""
			}},
		{"sim alone", "source: {type: sim}\n", func(c *Config) string {
			if c.Source.Sim.Speed != 1 {
				return fmt.Sprintf("sim speed %v, want 1: the wall clock", c.Source.Sim.Speed)
			}
			return ""
		}},
		{"sim as fast as it goes when asked", "source: {type: sim, sim: {speed: 0}}\n", func(c *Config) string {
			if c.Source.Sim.Speed != 0 {
				return fmt.Sprintf("sim speed %v, want 0 as written", c.Source.Sim.Speed)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		c, err := Parse("config.yaml", []byte(tt.text), noEnv)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if problem := tt.check(c); problem != "" {
			t.Errorf("%s: %s", tt.name, problem)
		}
	}
	// What the user writes is still checked.
	_, err := Parse("config.yaml", []byte("source:\n  type: prometheus\n  interval: 2s\n  prometheus: {url: http://127.0.0.1:9090, timeout: 10s}\n"), noEnv)
	if err == nil || !strings.Contains(err.Error(), "source.prometheus.timeout 10s is longer than source.interval 2s") {
		t.Errorf("a written timeout over the interval: got %v, want it refused", err)
	}
}
