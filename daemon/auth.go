package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"math"
	"net/http"
	"net/netip"
	"strconv"
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
//
// A password costs a bcrypt (tens of milliseconds of CPU) to check, so a
// client that sends wrong ones over and over could fill the machine's
// cores; and a client that guesses should not guess fast. Each client
// (by address, or the address a trusted proxy's X-Forwarded-For names)
// may fail a few times in a row, then gets 429 with Retry-After until its
// allowance refills (see failures), whatever it sends: the limit comes
// before any check of a password or token, so that a throttled client
// cannot tell a right one from a wrong one. Passwords bcrypt accepted are
// remembered, so a client that sends its password with every request
// costs one bcrypt.
type authenticator struct {
	token []byte
	users map[string][]byte // user → bcrypt hash
	basic bool              // say "Basic" in WWW-Authenticate

	// verified holds, per user, the SHA-256 of the password bcrypt
	// accepted, compared in constant time.
	mu       sync.Mutex
	verified map[string][sha256.Size]byte

	failures failures
	// proxies are server.trusted_proxies: a request from one is from the
	// client its X-Forwarded-For names.
	proxies []netip.Prefix

	refused  atomic.Int64 // requests refused since the last log line
	loggedAt atomic.Int64 // Unix ns of that line
}

// decoyHash is compared when a user is unknown, so a wrong user takes as
// long as a wrong password: a bcrypt hash of "gpuwatch decoy" at
// bcrypt.DefaultCost, written out rather than computed at start, where
// it cost every gpuwatch command (a /gpu answer's CLI as much as the
// agent) tens of milliseconds of CPU.
const decoyHash = "$2a$10$NECz/SkNvI4JUjg2i.4IMeljKZZDxzMci6.I8/0cCJ4memSqvPGrS"

// newAuthenticator returns the server section's authenticator, nil when it
// asks for no credentials. now is the wall clock of the failure limits.
func newAuthenticator(s *config.Server, now func() time.Time) (*authenticator, error) {
	if !s.Authenticated() {
		return nil, nil
	}
	token, err := s.Token()
	if err != nil {
		return nil, err
	}
	proxies, err := s.Proxies()
	if err != nil {
		return nil, err
	}
	a := &authenticator{token: []byte(token), users: map[string][]byte{}, basic: len(s.BasicAuthUsers) > 0, proxies: proxies,
		verified: map[string][sha256.Size]byte{}, failures: failures{now: now, clients: map[string]*allowance{}}}
	for user, hash := range s.BasicAuthUsers {
		a.users[user] = []byte(hash)
	}
	return a, nil
}

// open reports whether a path needs no credentials.
func open(path string) bool { return path == "/healthz" || strings.HasPrefix(path, "/slack/") }

// verdict is what the authenticator makes of a request.
type verdict int

const (
	accepted verdict = iota
	refused
	tooManyFailures
)

// authenticate decides on r. A request without credentials is refused
// and counts for nothing. One with credentials from a client that failed
// too often is refused with the wait, before they are looked at; else
// the checks that cost nothing (the token, a password already verified),
// then bcrypt. A failure counts against the client, a success clears its
// failures.
func (a *authenticator) authenticate(r *http.Request) (verdict, time.Duration) {
	if r.Header.Get("Authorization") == "" {
		return refused, 0
	}
	client := a.clientOf(r)
	if wait := a.failures.blocked(client); wait > 0 {
		return tooManyFailures, wait
	}
	if a.authenticated(r) {
		a.failures.forget(client)
		return accepted, 0
	}
	if user, password, ok := r.BasicAuth(); ok && len(a.users) > 0 && a.checkPassword(user, password) {
		a.failures.forget(client)
		return accepted, 0
	}
	a.failures.add(client)
	return refused, 0
}

// authenticated reports whether r carries credentials that cost nothing to
// check: the token (`Authorization: Bearer`, the scheme in any case, as
// RFC 9110 has it) or a user's password bcrypt accepted before.
func (a *authenticator) authenticated(r *http.Request) bool {
	scheme, credentials, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if strings.EqualFold(scheme, "Bearer") && len(a.token) > 0 {
		return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(credentials)), a.token) == 1
	}
	user, password, ok := r.BasicAuth()
	if !ok {
		return false
	}
	a.mu.Lock()
	known, remembered := a.verified[user]
	a.mu.Unlock()
	sum := sha256.Sum256([]byte(password))
	return remembered && subtle.ConstantTimeCompare(sum[:], known[:]) == 1
}

// checkPassword checks user's password with bcrypt and remembers it when
// it is right.
func (a *authenticator) checkPassword(user, password string) bool {
	hash, ok := a.users[user]
	if !ok {
		_ = bcrypt.CompareHashAndPassword([]byte(decoyHash), []byte(password))
		return false
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return false
	}
	a.mu.Lock()
	a.verified[user] = sha256.Sum256([]byte(password))
	a.mu.Unlock()
	return true
}

// clientOf names the client of r: its address, without the port; or,
// when that is a trusted proxy's, the address X-Forwarded-For names
// last that is not a trusted proxy's. Proxies append the address they
// took the request from, so what a client wrote itself in the header
// (to the left) is not believed.
func (a *authenticator) clientOf(r *http.Request) string {
	addr := remoteAddr(r)
	if len(a.proxies) == 0 || !a.trusted(addr) {
		return addr.String()
	}
	forwarded := r.Header.Values("X-Forwarded-For")
	for i := len(forwarded) - 1; i >= 0; i-- {
		hops := strings.Split(forwarded[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				return addr.String() // garbage: the last proxy is the client
			}
			if addr = hop.Unmap(); !a.trusted(addr) {
				return addr.String()
			}
		}
	}
	return addr.String()
}

// trusted reports whether addr is a trusted proxy's.
func (a *authenticator) trusted(addr netip.Addr) bool {
	for _, p := range a.proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// remoteAddr is the address r came from.
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		a, _ := netip.ParseAddr(r.RemoteAddr)
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

// Each client may fail failureBurst password checks in a row; its
// allowance then refills by one every failureRefill: a person who
// mistypes is not slowed, a loop that guesses gets a few checks a minute.
const (
	failureBurst  = 10
	failureRefill = 6 * time.Second
	// maxClients bounds the clients followed; past it, new ones share
	// one allowance.
	maxClients = 4096
)

// failures is the one place that counts failed password checks, per
// client.
type failures struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[string]*allowance
}

// allowance is how many more failures a client may have, as of at.
type allowance struct {
	left float64
	at   time.Time
}

// refilled returns the allowance at now.
func (a allowance) refilled(now time.Time) float64 {
	return min(failureBurst, a.left+float64(now.Sub(a.at))/float64(failureRefill))
}

// blocked returns how long client must wait before its password is
// checked again; zero when it may be now.
func (f *failures) blocked(client string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.clients[f.key(client)]
	if !ok {
		return 0
	}
	left := a.refilled(f.now())
	if left >= 1 {
		return 0
	}
	return time.Duration(math.Ceil((1 - left) * float64(failureRefill)))
}

// add counts a failure of client.
func (f *failures) add(client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	key := f.key(client)
	a, ok := f.clients[key]
	if !ok {
		if len(f.clients) >= maxClients {
			f.prune(now)
			key = f.key(client)
		}
		a = &allowance{left: failureBurst, at: now}
		f.clients[key] = a
	}
	a.left, a.at = a.refilled(now)-1, now
}

// forget clears client's failures: it knew its password.
func (f *failures) forget(client string) {
	f.mu.Lock()
	delete(f.clients, client)
	f.mu.Unlock()
}

// key is where client's failures count: its own entry, or, when
// maxClients are followed, the one every other client shares.
func (f *failures) key(client string) string {
	if _, ok := f.clients[client]; ok || len(f.clients) < maxClients {
		return client
	}
	return ""
}

// prune forgets the clients whose allowance is full again.
func (f *failures) prune(now time.Time) {
	for c, a := range f.clients {
		if a.refilled(now) >= failureBurst {
			delete(f.clients, c)
		}
	}
}

// requireAuth asks next's requests for a's credentials; a refused one gets
// 401 and a JSON error, one from a client that failed too often 429 with
// Retry-After, and the log says, at most once a minute, how many were
// refused. Credentials never reach the log.
func (d *Daemon) requireAuth(a *authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		v, wait := a.authenticate(r)
		if v == accepted {
			next.ServeHTTP(w, r)
			return
		}
		n := a.refused.Add(1)
		if now := time.Now().UnixNano(); now-a.loggedAt.Load() >= int64(time.Minute) {
			a.loggedAt.Store(now)
			a.refused.Store(0)
			d.logger.Warn("HTTP API requests without valid credentials refused", "requests", n, "last_from", a.clientOf(r), "path", r.URL.Path)
		}
		if v == tooManyFailures {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeError(w, http.StatusTooManyRequests, "too many wrong passwords or tokens from this address: try again in "+strconv.Itoa(secs)+"s")
			return
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
