package daemon_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostGuard: a loopback listener without credentials (the default)
// answers requests for localhost, loopback addresses, server.external_url's
// host and server.allowed_hosts, and refuses with 403 and what to do one
// for any other name, as a page of evil.example that points its name at
// 127.0.0.1 would send (DNS rebinding): it reads no status and adds no
// silence. The log says so once per name.
func TestHostGuard(t *testing.T) {
	cfg := webhookConfig(t, t.TempDir(), "http://127.0.0.1:1/hook", "0s")
	cfg.Server.ExternalURL = "https://gpu.example.org"
	cfg.Server.AllowedHosts = []string{"gpuwatch.internal"}
	r := start(t, cfg, nil)
	h := r.D.Handler()
	do := func(method, host, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for _, host := range []string{"127.0.0.1:9477", "localhost:9477", "LOCALHOST", "localhost.", "[::1]:9477", "127.1.2.3", "app.localhost:9477",
		"gpu.example.org", "gpu.example.org:443", "gpuwatch.internal:9477", ""} {
		if w := do(http.MethodGet, host, "/api/v1/status", ""); w.Code != http.StatusOK {
			t.Errorf("GET /api/v1/status for Host %q: HTTP %d %s, want 200", host, w.Code, w.Body)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:9477", "localhost.evil.example", "10.0.0.1:9477", "127.0.0.1.nip.io"} {
		if w := do(http.MethodGet, host, "/api/v1/status", ""); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "add it to server.allowed_hosts") {
			t.Errorf("GET /api/v1/status for Host %q: HTTP %d %s, want 403 saying what to do", host, w.Code, w.Body)
		}
	}
	w := do(http.MethodPost, "evil.example", "/api/v1/silences", `{"matchers":["alert=~\".*\""],"duration":"720h"}`)
	if w.Code != http.StatusForbidden {
		t.Errorf("POST /api/v1/silences for Host evil.example: HTTP %d, want 403", w.Code)
	}
	if list := do(http.MethodGet, "127.0.0.1", "/api/v1/silences", ""); strings.TrimSpace(list.Body.String()) != "[]" {
		t.Errorf("silences after the refused request: %s, want none", list.Body)
	}
	if n := strings.Count(r.Logs.String(), "refused requests for a host name"); n != 5 {
		t.Errorf("the log says %d times that requests were refused, want once per name (5):\n%s", n, r.Logs)
	}
}
