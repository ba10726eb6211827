// Package web is gpuwatch's page in the browser, served by the daemon and
// by a fleet's hub from the binary itself: the GPUs now, the alerts and
// silences, each GPU's history as charts, and the usage digest.
//
// The page is static files embedded in the binary (HTML, CSS, one script
// and the vendored uPlot chart library); it reads and acts through the
// daemon's JSON API, the same API the CLI uses, plus the two answers this
// package adds: a GPU's history for the charts and what the page needs to
// know of its session. Nothing loads from elsewhere, so the page works on
// a server with no internet.
//
// Where the API asks for credentials, Login puts a login form and browser
// sessions (a cookie that is Secure, HttpOnly and SameSite=Strict) in front
// of it; Protect adds the headers every answer carries (a
// Content-Security-Policy without unsafe-inline) and refuses state changes
// a browser makes for another site.
package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"
)

// PageInfo is what the page needs to know of the gpuwatch it talks to.
type PageInfo struct {
	// Host is the host's name, or the hub's.
	Host string `json:"host"`
	// Hub is whether this gpuwatch watches a fleet through Prometheus:
	// the page groups the GPUs by host and lets them be filtered.
	Hub bool `json:"hub"`
	// Digests are the names of the configured digests.
	Digests []string `json:"digests"`
	// Rules are the names of the alert rules, for the silence form.
	Rules []string `json:"rules"`
	// Refresh is how often the page asks for the GPUs again.
	Refresh time.Duration `json:"-"`
}

// Options are what the page takes from the daemon.
type Options struct {
	// Info says what the page needs to know, asked each time a page loads
	// (a reload of the config may change it).
	Info func() PageInfo
	// History gives the charts their data.
	History HistorySource
	Logger  *slog.Logger
	// Now is the wall clock, for sessions; nil means time.Now.
	Now func() time.Time
}

// Server serves the page, its files and its own answers.
type Server struct {
	opts   Options
	assets *assets
}

// New makes a Server, compressing the embedded files once.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, assets: a}, nil
}

// Register adds the page's routes to mux:
//
//	GET /                    the page
//	GET /assets/{file}       its files (gzip when asked, ETag)
//	GET /api/v1/history      one GPU's memory, utilization and temperature; ?host=&gpu=0&window=6h
//	GET /web/session         what the page knows of its session: the user, the CSRF token, the host, digests
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.assets.serveFile("index.html"))
	mux.HandleFunc("GET /assets/{file...}", s.assets.serve)
	mux.HandleFunc("GET /api/v1/history", s.history)
	mux.HandleFunc("GET /web/session", s.session)
}

// sessionJSON is GET /web/session.
type sessionJSON struct {
	PageInfo
	// User is who logged in; "" where the API asks for no credentials or
	// the request carried them itself.
	User string `json:"user"`
	// CSRFToken goes in the X-CSRF-Token header of every request of the
	// page that changes state, where a login session authenticates it.
	CSRFToken string `json:"csrf_token,omitempty"`
	// Login is whether the page runs in a login session (it can log out).
	Login          bool    `json:"login"`
	RefreshSeconds float64 `json:"refresh_seconds"`
}

// Refresh bounds: the page asks at most once a second, at least every 15.
const (
	minRefresh = time.Second
	maxRefresh = 15 * time.Second
)

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	info := PageInfo{}
	if s.opts.Info != nil {
		info = s.opts.Info()
	}
	if info.Digests == nil {
		info.Digests = []string{}
	}
	if info.Rules == nil {
		info.Rules = []string{}
	}
	out := sessionJSON{PageInfo: info, RefreshSeconds: min(max(info.Refresh, minRefresh), maxRefresh).Seconds()}
	if sess, ok := sessionOf(r); ok {
		out.User, out.CSRFToken, out.Login = sess.user, sess.csrf, true
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
