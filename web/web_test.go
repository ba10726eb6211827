package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/web"
)

// fakeHistory has readings of host "a"'s GPU 0 only.
type fakeHistory struct{ asked []string }

func (f *fakeHistory) History(_ context.Context, host string, gpu int, _ string, window time.Duration) (web.Series, error) {
	f.asked = append(f.asked, host+"/"+window.String())
	if host != "a" || gpu != 0 {
		return web.Series{}, web.ErrUnknownGPU
	}
	nan := math.NaN()
	return web.Series{Step: time.Minute, End: time.Unix(600, 0),
		MemoryUsed: []float64{nan, 50, 60}, Utilization: []float64{10, nan, 30}, Temperature: []float64{40, 41, nan}}, nil
}

// page is the page's handler as the daemon mounts it, without credentials.
func page(t *testing.T, hist web.HistorySource) http.Handler {
	t.Helper()
	s, err := web.New(web.Options{History: hist, Info: func() web.PageInfo {
		return web.PageInfo{Host: "a", Digests: []string{"daily"}, Refresh: 200 * time.Millisecond}
	}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	return web.Protect(mux)
}

func get(t *testing.T, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestPageLoadsOnlyItsOwnFiles: the page and every file it names come from
// the binary, compressed when asked, with an ETag the browser revalidates;
// nothing is loaded from another host, and no script or style is inline,
// as the Content-Security-Policy every answer carries demands.
func TestPageLoadsOnlyItsOwnFiles(t *testing.T) {
	h := page(t, nil)
	w := get(t, h, "/")
	if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: got %d %s, want the page", w.Code, w.Header().Get("Content-Type"))
	}
	csp := w.Header().Get("Content-Security-Policy")
	if csp == "" || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy: got %q, want scripts from this server only and nothing unsafe", csp)
	}
	html := w.Body.String()
	if regexp.MustCompile(`(?i)<script>|<style|\sstyle=|\son[a-z]+=`).MatchString(html) {
		t.Errorf("the page has inline script or style, which its policy refuses:\n%s", html)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 4 {
		t.Fatalf("the page names %d files, want its script, styles and the chart library", len(refs))
	}
	for _, ref := range refs {
		if !strings.HasPrefix(ref[1], "/assets/") {
			t.Errorf("the page loads %q: want only its own /assets/", ref[1])
			continue
		}
		plain := get(t, h, ref[1])
		zipped := get(t, h, ref[1], "Accept-Encoding", "gzip, br")
		if plain.Code != http.StatusOK || zipped.Code != http.StatusOK {
			t.Fatalf("GET %s: got %d and %d, want 200", ref[1], plain.Code, zipped.Code)
		}
		if zipped.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(zipped.Body)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(zr)
			if !bytes.Equal(body, plain.Body.Bytes()) {
				t.Errorf("GET %s gzipped unpacks to something else than the file", ref[1])
			}
		}
		etag := plain.Header().Get("ETag")
		if again := get(t, h, ref[1], "If-None-Match", etag); etag == "" || again.Code != http.StatusNotModified {
			t.Errorf("GET %s with its ETag %q again: got %d, want 304", ref[1], etag, again.Code)
		}
	}
	if w := get(t, h, "/assets/vendor/uplot/LICENSE"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "MIT License") {
		t.Errorf("the chart library's license: got %d, want it served beside the library", w.Code)
	}
	if w := get(t, h, "/assets/nope.js"); w.Code != http.StatusNotFound {
		t.Errorf("GET /assets/nope.js: got %d, want 404", w.Code)
	}
}

// TestFirstLoadIsLight: everything the first load transfers, compressed,
// stays under 150 KB.
func TestFirstLoadIsLight(t *testing.T) {
	s, err := web.New(web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Size(); n > 150<<10 || n < 10<<10 {
		t.Errorf("the page's files come to %d bytes gzipped, want at most 150 KiB (and more than 10, or some are missing)", n)
	}
}

// TestHistoryAnswer: the charts get Unix times and readings, null where
// unknown; a GPU with no readings is 404, a bad question 400.
func TestHistoryAnswer(t *testing.T) {
	hist := &fakeHistory{}
	h := page(t, hist)
	w := get(t, h, "/api/v1/history?host=a&gpu=0&window=3m")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/history: %d %s", w.Code, w.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"host": "a", "gpu": 0.0, "step_seconds": 60.0, "times": []any{480.0, 540.0, 600.0},
		"memory_used_percent": []any{nil, 50.0, 60.0}, "utilization_percent": []any{10.0, nil, 30.0}, "temperature_c": []any{40.0, 41.0, nil}}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("history: got %s, want %s", gotJSON, wantJSON)
	}
	for path, code := range map[string]int{
		"/api/v1/history?host=b&gpu=0":             http.StatusNotFound,
		"/api/v1/history?host=a":                   http.StatusBadRequest,
		"/api/v1/history?host=a&gpu=-1":            http.StatusBadRequest,
		"/api/v1/history?host=a&gpu=0&window=2d":   http.StatusBadRequest,
		"/api/v1/history?host=a&gpu=0&window=10s":  http.StatusBadRequest,
		"/api/v1/history?host=a&gpu=0&window=soon": http.StatusBadRequest,
	} {
		if w := get(t, h, path); w.Code != code || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("GET %s: got %d %s, want %d and an error saying why", path, w.Code, w.Body, code)
		}
	}
	if w := get(t, h, "/api/v1/history?host=a&gpu=0"); w.Code != http.StatusOK || hist.asked[len(hist.asked)-1] != "a/6h0m0s" {
		t.Errorf("without a window: got %d, asked %v; want the last 6h", w.Code, hist.asked)
	}
}

// TestSessionAnswer: without a login the page is told the host, the
// digests and how often to refresh (at least a second), and no user.
func TestSessionAnswer(t *testing.T) {
	w := get(t, page(t, nil), "/web/session")
	var got struct {
		Host           string   `json:"host"`
		Digests        []string `json:"digests"`
		User           string   `json:"user"`
		Login          bool     `json:"login"`
		RefreshSeconds float64  `json:"refresh_seconds"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Host != "a" || len(got.Digests) != 1 || got.User != "" || got.Login || got.RefreshSeconds != 1 {
		t.Errorf("GET /web/session: got %+v, want host a, digest daily, no login, refresh 1s", got)
	}
}

// TestCrossSiteChangesRefused: a browser's POST or DELETE for another
// site's page is refused before it reaches the API; the same from the
// page itself, or from a program, passes.
func TestCrossSiteChangesRefused(t *testing.T) {
	reached := 0
	h := web.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	for _, tc := range []struct {
		name   string
		method string
		header []string
		want   int
	}{
		{"a cross-site form post", http.MethodPost, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a cross-site delete", http.MethodDelete, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"an old browser's post from elsewhere", http.MethodPost, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"the page's own post", http.MethodPost, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"a program's post", http.MethodPost, nil, http.StatusOK},
		{"a cross-site read", http.MethodGet, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusOK},
	} {
		before := reached
		req := httptest.NewRequest(tc.method, "http://127.0.0.1:9477/api/v1/silences", strings.NewReader("{}"))
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.want || (tc.want == http.StatusOK) != (reached > before) {
			t.Errorf("%s: got %d (reached the API: %v), want %d", tc.name, w.Code, reached > before, tc.want)
		}
	}
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
}
