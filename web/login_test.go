package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/web"
)

// loginFront is a page behind a login whose only account is alice with
// "s3cret"; guarded stands for the API's own authentication and refuses
// all. now is its clock.
func loginFront(t *testing.T, now *time.Time) http.Handler {
	t.Helper()
	s, err := web.New(web.Options{Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	mux.HandleFunc("POST /api/v1/silences", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="gpuwatch"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	verify := func(_ *http.Request, user, secret string) (bool, time.Duration) {
		return user == "alice" && secret == "s3cret", 0
	}
	return web.Protect(s.Login(mux, guarded, verify))
}

// send sends a request with a cookie and headers (name, value pairs).
func send(h http.Handler, method, path, body string, cookie *http.Cookie, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" && strings.Contains(body, "=") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestLoginSession walks a browser through the login: the page sends it
// to the form; wrong credentials are refused; right ones get a cookie that
// is Secure, HttpOnly and SameSite=Strict; a change in the session needs
// its CSRF token; the session ends at logout and after its lifetime.
func TestLoginSession(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	h := loginFront(t, &now)

	if w := send(h, http.MethodGet, "/", "", nil); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/login" {
		t.Fatalf("GET / without a session: got %d to %q, want 303 to /login", w.Code, w.Header().Get("Location"))
	}
	if w := send(h, http.MethodGet, "/login", "", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `name="password"`) {
		t.Fatalf("GET /login: got %d, want the form", w.Code)
	}
	if w := send(h, http.MethodGet, "/assets/app.css", "", nil); w.Code != http.StatusOK {
		t.Errorf("the page's files without a session: got %d, want 200 (the form uses them)", w.Code)
	}
	if w := send(h, http.MethodGet, "/api/v1/status", "", nil, web.PageHeader, "1"); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("the page's API request without a session: got %d, challenge %q; want 401 without a challenge (no password dialog)", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	if w := send(h, http.MethodGet, "/api/v1/status", "", nil); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("a program's request without credentials: got %d, want the API's own 401 and challenge", w.Code)
	}
	for _, form := range []url.Values{{"user": {"alice"}, "password": {"wrong"}}, {"user": {"mallory"}, "password": {"s3cret"}}, {"user": {"alice"}}} {
		w := send(h, http.MethodPost, "/login", form.Encode(), nil)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "Wrong user or password") || len(w.Result().Cookies()) > 0 {
			t.Errorf("POST /login %v: got %d, cookies %v; want 401, the form saying so, no cookie", form, w.Code, w.Result().Cookies())
		}
		if strings.Contains(w.Body.String(), "wrong") && form.Get("password") == "wrong" {
			t.Errorf("the refused form quotes the password it was given")
		}
	}

	w := send(h, http.MethodPost, "/login", url.Values{"user": {"alice"}, "password": {"s3cret"}}.Encode(), nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		t.Fatalf("POST /login with alice's password: got %d to %q, want 303 to /", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login: got cookies %v, want one", cookies)
	}
	c := cookies[0]
	if c.Name != web.SessionCookie || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || len(c.Value) < 40 {
		t.Errorf("session cookie: got %+v, want Secure, HttpOnly, SameSite=Strict, Path=/ and a long random value", c)
	}
	session := send(h, http.MethodGet, "/web/session", "", c)
	var info struct {
		User      string `json:"user"`
		CSRFToken string `json:"csrf_token"`
		Login     bool   `json:"login"`
	}
	decode(t, session.Body.String(), &info)
	if info.User != "alice" || !info.Login || len(info.CSRFToken) < 40 {
		t.Fatalf("GET /web/session in the session: got %+v, want alice, a login and a CSRF token", info)
	}
	if w := send(h, http.MethodGet, "/", "", c); w.Code != http.StatusOK {
		t.Errorf("GET / in the session: got %d, want the page", w.Code)
	}
	for name, header := range map[string][]string{"no token": nil, "a wrong token": {web.CSRFHeader, info.CSRFToken + "x"}} {
		if w := send(h, http.MethodPost, "/api/v1/silences", "{}", c, header...); w.Code != http.StatusForbidden {
			t.Errorf("POST /api/v1/silences in the session with %s: got %d, want 403", name, w.Code)
		}
	}
	if w := send(h, http.MethodPost, "/api/v1/silences", "{}", c, web.CSRFHeader, info.CSRFToken); w.Code != http.StatusCreated {
		t.Errorf("POST /api/v1/silences in the session with its token: got %d, want it through", w.Code)
	}
	if w := send(h, http.MethodPost, "/api/v1/silences", "{}", c, web.CSRFHeader, info.CSRFToken, "Sec-Fetch-Site", "cross-site"); w.Code != http.StatusForbidden {
		t.Errorf("a cross-site POST that has the session's token: got %d, want 403", w.Code)
	}

	// Logout ends the session: the cookie no longer opens anything.
	if w := send(h, http.MethodPost, "/logout", "", c); w.Code != http.StatusForbidden {
		t.Errorf("POST /logout without the CSRF token: got %d, want 403", w.Code)
	}
	if w := send(h, http.MethodPost, "/logout", "", c, web.CSRFHeader, info.CSRFToken); w.Code != http.StatusSeeOther {
		t.Errorf("POST /logout: got %d, want 303 to the form", w.Code)
	}
	if w := send(h, http.MethodGet, "/", "", c); w.Code != http.StatusSeeOther {
		t.Errorf("GET / after logout: got %d, want 303 to /login", w.Code)
	}

	// A session ends after its lifetime.
	w = send(h, http.MethodPost, "/login", url.Values{"user": {"alice"}, "password": {"s3cret"}}.Encode(), nil)
	c = w.Result().Cookies()[0]
	now = now.Add(web.SessionLifetime - time.Second)
	if w := send(h, http.MethodGet, "/", "", c); w.Code != http.StatusOK {
		t.Errorf("GET / a second before the session ends: got %d, want the page", w.Code)
	}
	now = now.Add(time.Second)
	if w := send(h, http.MethodGet, "/", "", c); w.Code != http.StatusSeeOther {
		t.Errorf("GET / when the session has ended: got %d, want 303 to /login", w.Code)
	}
}
