package daemon_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
	"github.com/gpuwatch/gpuwatch/web"
)

// TestBrowserLoginTakesTheAPICredentials: the page's login form takes
// what the API takes, over the daemon's TLS: a basic-auth user's password,
// or the API token with no user; it refuses the rest, logs that it did,
// and never shows a credential in an answer or the log.
func TestBrowserLoginTakesTheAPICredentials(t *testing.T) {
	dir := t.TempDir()
	cfg := authConfig(t, dir)
	r := start(t, cfg, nil)
	client := trusting(t, cfg.Server.TLS.CertFile)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := "https://" + r.D.Addr()
	var answers strings.Builder
	login := func(user, secret string) (int, []*http.Cookie) {
		t.Helper()
		resp, err := client.PostForm(base+"/login", url.Values{"user": {user}, "password": {secret}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answers.Write(b)
		return resp.StatusCode, resp.Cookies()
	}
	for _, tc := range []struct{ user, secret string }{{"alice", "wrong"}, {"", apiToken + "x"}, {"alice", apiToken}, {"mallory", apiPassword}} {
		if code, cookies := login(tc.user, tc.secret); code != http.StatusUnauthorized || len(cookies) != 0 {
			t.Errorf("login as %q with a wrong secret: got %d and %d cookies, want 401 and none", tc.user, code, len(cookies))
		}
	}
	for _, tc := range []struct{ user, secret, who string }{{"alice", apiPassword, "alice"}, {"", apiToken, "token"}} {
		code, cookies := login(tc.user, tc.secret)
		if code != http.StatusSeeOther || len(cookies) != 1 {
			t.Fatalf("login as %q: got %d and cookies %v, want 303 and the session cookie", tc.who, code, cookies)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/web/session", nil)
		req.AddCookie(cookies[0])
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"user":"`+tc.who+`"`) {
			t.Errorf("GET /web/session after logging in as %s: got %d %s", tc.who, resp.StatusCode, b)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != web.ContentSecurityPolicy {
			t.Errorf("the daemon's answers carry Content-Security-Policy %q, want %q", csp, web.ContentSecurityPolicy)
		}
	}
	r.Stop()
	if !strings.Contains(r.Logs.String(), "browser logins with wrong credentials refused") {
		t.Errorf("the log does not say logins were refused:\n%s", r.Logs)
	}
	for where, text := range map[string]string{"the log": r.Logs.String(), "the answers": answers.String()} {
		notifiertest.AssertNoSecrets(t, where, text, apiToken, apiPassword)
	}
}
