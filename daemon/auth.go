package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/config"
)

// authenticator checks the credentials of HTTP API requests, as
// server.bearer_token(_file) and server.basic_auth_users configure them:
// a request passes with either. /healthz stays open (probes) and /slack/
// has Slack's signatures.
type authenticator struct {
	token []byte
	users map[string][]byte // user → bcrypt hash
	basic bool              // say "Basic" in WWW-Authenticate

	// good remembers the user and password pairs bcrypt accepted, as
	// hashes, so a client that sends its password with every request
	// costs one bcrypt, not one per request.
	mu   sync.Mutex
	good map[[sha256.Size]byte]bool

	refused  atomic.Int64 // requests refused since the last log line
	loggedAt atomic.Int64 // Unix ns of that line
}

// maxRemembered bounds the accepted pairs remembered.
const maxRemembered = 256

// decoyHash is compared when a user is unknown, so a wrong user takes as
// long as a wrong password.
var decoyHash, _ = bcrypt.GenerateFromPassword([]byte("gpuwatch decoy"), bcrypt.DefaultCost)

// newAuthenticator returns the server section's authenticator, nil when it
// asks for no credentials.
func newAuthenticator(s *config.Server) (*authenticator, error) {
	if !s.Authenticated() {
		return nil, nil
	}
	token, err := s.Token()
	if err != nil {
		return nil, err
	}
	a := &authenticator{token: []byte(token), users: map[string][]byte{}, basic: len(s.BasicAuthUsers) > 0,
		good: map[[sha256.Size]byte]bool{}}
	for user, hash := range s.BasicAuthUsers {
		a.users[user] = []byte(hash)
	}
	return a, nil
}

// open reports whether a path needs no credentials.
func open(path string) bool { return path == "/healthz" || strings.HasPrefix(path, "/slack/") }

// allowed reports whether r carries credentials the config accepts.
func (a *authenticator) allowed(r *http.Request) bool {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && len(a.token) > 0 {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(bearer)), a.token) == 1
	}
	user, password, ok := r.BasicAuth()
	if !ok || len(a.users) == 0 {
		return false
	}
	pair := sha256.Sum256([]byte(user + "\x00" + password))
	a.mu.Lock()
	known := a.good[pair]
	a.mu.Unlock()
	if known {
		return true
	}
	hash, ok := a.users[user]
	if !ok {
		_ = bcrypt.CompareHashAndPassword(decoyHash, []byte(password))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return false
	}
	a.mu.Lock()
	if len(a.good) >= maxRemembered {
		clear(a.good)
	}
	a.good[pair] = true
	a.mu.Unlock()
	return true
}

// requireAuth asks next's requests for a's credentials; a refused one gets 401 and a
// JSON error, and the log says, at most once a minute, how many were
// refused. Credentials never reach the log.
func (d *Daemon) requireAuth(a *authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open(r.URL.Path) || a.allowed(r) {
			next.ServeHTTP(w, r)
			return
		}
		n := a.refused.Add(1)
		if now := time.Now().UnixNano(); now-a.loggedAt.Load() >= int64(time.Minute) {
			a.loggedAt.Store(now)
			a.refused.Store(0)
			d.logger.Warn("HTTP API requests without valid credentials refused", "requests", n, "last_from", r.RemoteAddr, "path", r.URL.Path)
		}
		if a.basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="gpuwatch"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gpuwatch"`)
		}
		writeError(w, http.StatusUnauthorized, "this gpuwatch asks for credentials: the API token (Authorization: Bearer) or a user's password (basic auth); "+
			"gpuwatch silence, outbox and status take --token-file, or --user and --password-file")
	})
}
