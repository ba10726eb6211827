package daemon_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

const (
	apiToken    = "9c1f0e4d7b2a6c3e8f5d0a1b2c3d4e5f"
	apiPassword = "correct horse battery staple"
)

// authConfig is a daemon on loopback with TLS, an API token in a file,
// the basic-auth user alice, and the Slack app, all beside dir.
func authConfig(t *testing.T, dir string) *config.Config {
	t.Helper()
	certFile, keyFile := testcert.Write(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "api-token"), []byte(apiToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(apiPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`storage: {path: %s}
server:
  listen: 127.0.0.1:0
  tls: {cert_file: %s, key_file: %s}
  bearer_token_file: api-token
  basic_auth_users:
    alice: %s
slack:
  signing_secret: %s
source: {type: sim}
receivers: [{name: hook, webhook: {url: "http://127.0.0.1:1/hook"}}]
route: {receiver: hook}
%s`, filepath.Join(dir, "state.db"), certFile, keyFile, hash, signingSecret, hotRule)
	cfg, err := config.Parse(filepath.Join(dir, "gpuwatch.yaml"), []byte(text), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	return cfg
}

// trusting is an HTTPS client that trusts the certificate in certFile.
func trusting(t *testing.T, certFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: patience, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestAPIAuthentication: with server.tls and credentials configured, every
// API path and /metrics refuse a request without valid credentials (401),
// take the token or alice's password, and speak HTTPS only; /healthz and
// the Slack app (which checks Slack's signatures) need none. No credential
// reaches the log or an answer.
func TestAPIAuthentication(t *testing.T) {
	dir := t.TempDir()
	cfg := authConfig(t, dir)
	r := start(t, cfg, nil)
	client := trusting(t, cfg.Server.TLS.CertFile)
	base := "https://" + r.D.Addr()
	do := func(method, path, body string, auth func(*http.Request)) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth != nil {
			auth(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bearer := func(token string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	}
	basic := func(user, password string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, password) }
	}
	// First, while the daemon is young: its source never samples, and
	// past 30s without a sample /healthz rightly answers 503.
	if code, body := do(http.MethodGet, "/healthz", "", nil); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz without credentials: got HTTP %d %q, want 200 ok", code, body)
	}
	var answers strings.Builder
	protected := []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/status", ""},
		{http.MethodGet, "/api/v1/alerts", ""},
		{http.MethodGet, "/api/v1/silences", ""},
		{http.MethodPost, "/api/v1/silences", `{"matchers":["alert=\"GPUHot\""],"duration":"1h"}`},
		{http.MethodDelete, "/api/v1/silences/nope", ""},
		{http.MethodGet, "/api/v1/outbox", ""},
		{http.MethodGet, "/api/v1/digest", ""},
		{http.MethodGet, "/metrics", ""},
	}
	for _, p := range protected {
		for name, auth := range map[string]func(*http.Request){
			"no credentials": nil, "a wrong token": bearer(apiToken + "x"), "a wrong password": basic("alice", "wrong"),
			"an unknown user": basic("mallory", apiPassword), "the token as a password": basic("alice", apiToken),
		} {
			code, body := do(p.method, p.path, p.body, auth)
			answers.WriteString(body)
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: got HTTP %d, want 401", p.method, p.path, name, code)
			}
		}
		for name, auth := range map[string]func(*http.Request){"the token": bearer(apiToken), "alice's password": basic("alice", apiPassword)} {
			code, body := do(p.method, p.path, p.body, auth)
			answers.WriteString(body)
			if code == http.StatusUnauthorized {
				t.Errorf("%s %s with %s: got HTTP 401, want it let in", p.method, p.path, name)
			}
		}
	}
	form := url.Values{"command": {"/gpu"}, "text": {"alerts"}, "user_id": {"U1"}, "channel_id": {"C1"}}.Encode()
	signed := slackRequest("/slack/commands", form, signingSecret, time.Now())
	signed.RequestURI, signed.URL = "", mustURL(t, base+"/slack/commands")
	resp, err := client.Do(signed)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a signed Slack command without API credentials: got HTTP %d, want 200 (Slack's signature is enough)", resp.StatusCode)
	}

	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + r.D.Addr() + "/api/v1/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS listener: got HTTP %d, want it refused", resp.StatusCode)
		}
	}
	r.Stop()
	if !strings.Contains(r.Logs.String(), "HTTP API requests without valid credentials refused") {
		t.Errorf("the log does not say requests were refused:\n%s", r.Logs)
	}
	for where, text := range map[string]string{"the log": r.Logs.String(), "the answers": answers.String()} {
		notifiertest.AssertNoSecrets(t, where, text, apiToken, apiPassword)
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestAuthFailuresLimited: a client that sends wrong passwords over and
// over gets 429 with Retry-After once it has failed ten times, and from
// then on nothing it sends is looked at until its wait is over: not a
// password bcrypt would check, not alice's password that was accepted
// before and is remembered, not the token, on the API or on the page's
// login form; so a throttled client cannot tell a right password from a
// wrong one. Another client is not held up.
func TestAuthFailuresLimited(t *testing.T) {
	dir := t.TempDir()
	cfg := authConfig(t, dir)
	r := start(t, cfg, nil)
	client := trusting(t, cfg.Server.TLS.CertFile)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	send := func(req *http.Request) *http.Response {
		t.Helper()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	get := func(auth func(*http.Request)) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+r.D.Addr()+"/api/v1/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		auth(req)
		return send(req)
	}
	login := func(user, secret string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "https://"+r.D.Addr()+"/login", strings.NewReader(url.Values{"user": {user}, "password": {secret}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return send(req)
	}
	right := func(req *http.Request) { req.SetBasicAuth("alice", apiPassword) }
	if resp := get(right); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's password: HTTP %d, want 200", resp.StatusCode)
	}
	wrong := func(req *http.Request) { req.SetBasicAuth("alice", "wrong") }
	for i := range 10 {
		if resp := get(wrong); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: HTTP %d, want 401", i+1, resp.StatusCode)
		}
	}
	resp := get(wrong)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the 11th wrong password in a row: HTTP %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for name, resp := range map[string]*http.Response{
		"alice's remembered password":        get(right),
		"the token":                          get(func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+apiToken) }),
		"a wrong token":                      get(func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+apiToken+"x") }),
		"alice's password on the login form": login("alice", apiPassword),
		"the token on the login form":        login("", apiToken),
		"a wrong token on the login form":    login("", "not-the-token-at-all"),
	} {
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s after too many wrong passwords: HTTP %d (Retry-After %q), want 429 with Retry-After: nothing is checked until the wait is over",
				name, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}

// TestAuthFailuresPerClientBehindProxy: behind a reverse proxy named in
// server.trusted_proxies, the limit on wrong passwords counts each client
// its X-Forwarded-For names apart: one that guesses is held up, the
// others behind the same proxy are not. What a client writes in
// X-Forwarded-For itself, before the proxy's own entry, is not believed;
// and without trusted proxies the header changes nothing.
func TestAuthFailuresPerClientBehindProxy(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		dir := t.TempDir()
		cfg := authConfig(t, dir)
		if trusted {
			cfg.Server.TrustedProxies = []string{"127.0.0.0/8"}
		}
		r := start(t, cfg, nil)
		client := trusting(t, cfg.Server.TLS.CertFile)
		get := func(forwarded string, password string) int {
			t.Helper()
			req, err := http.NewRequest(http.MethodGet, "https://"+r.D.Addr()+"/api/v1/status", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Forwarded-For", forwarded)
			req.SetBasicAuth("alice", password)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		for range 11 {
			get("198.51.100.1, 203.0.113.7", "wrong") // a guesser behind the proxy, with a made-up first hop
		}
		if code := get("203.0.113.7", apiPassword); code != http.StatusTooManyRequests {
			t.Errorf("trusted %v: the guesser with the right password: HTTP %d, want 429", trusted, code)
		}
		want := http.StatusOK
		if !trusted {
			want = http.StatusTooManyRequests // one address: the proxy's
		}
		if code := get("203.0.113.8", apiPassword); code != want {
			t.Errorf("trusted %v: another client behind the proxy: HTTP %d, want %d", trusted, code, want)
		}
		if code := get("198.51.100.1, 203.0.113.9", apiPassword); code != want {
			t.Errorf("trusted %v: a third client, claiming the guesser's made-up address first: HTTP %d, want %d", trusted, code, want)
		}
		r.Stop()
	}
}

// TestNoStoreBehindAuthentication: every answer that credentials let see
// (the API, /metrics, the pictures) says Cache-Control: no-store, so no
// browser or proxy cache keeps it; the page's own files, open to all,
// are checked again on each load (no-cache).
func TestNoStoreBehindAuthentication(t *testing.T) {
	dir := t.TempDir()
	cfg := authConfig(t, dir)
	r := start(t, cfg, newClock(base).Now)
	for i := range 3 {
		r.D.Step(snapshot(base.Add(time.Duration(i)*time.Minute), 60))
	}
	client := trusting(t, cfg.Server.TLS.CertFile)
	for path, want := range map[string]string{
		"/api/v1/status": "no-store", "/api/v1/alerts": "no-store", "/api/v1/silences": "no-store", "/api/v1/outbox": "no-store",
		"/api/v1/digest": "no-store", "/api/v1/digest?format=png": "no-store", "/api/v1/charts/0123.png": "no-store",
		"/api/v1/history?gpu=0": "no-store", "/metrics": "no-store", "/web/session": "no-store", "/": "no-cache",
		"/assets/app.js": "no-cache",
	} {
		req, err := http.NewRequest(http.MethodGet, "https://"+r.D.Addr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apiToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Cache-Control"); got != want {
			t.Errorf("GET %s (HTTP %d): Cache-Control %q, want %q", path, resp.StatusCode, got, want)
		}
	}
}
