package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// SessionCookie is the name of the cookie a browser login sets.
const SessionCookie = "gpuwatch_session"

// Session limits: how long a login lasts, and how many are kept (past
// that, the oldest ends).
const (
	SessionLifetime = 12 * time.Hour
	maxSessions     = 10000
)

// session is one browser's login.
type session struct {
	user    string
	csrf    string // what the page sends in X-CSRF-Token with a state change
	expires time.Time
}

// sessions are the browsers logged in, in memory: a restart asks them to
// log in again. They are kept by a hash of their cookie, so neither a
// look-up's timing nor a dump of the memory gives a cookie away.
type sessions struct {
	mu     sync.Mutex
	byHash map[[sha256.Size]byte]*session
	now    func() time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{byHash: map[[sha256.Size]byte]*session{}, now: now}
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start begins a session for user and returns its cookie value.
func (s *sessions) start(user string) (string, *session) {
	id := randomToken()
	sess := &session{user: user, csrf: randomToken(), expires: s.now().Add(SessionLifetime)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byHash) >= maxSessions {
		s.forgetOldest()
	}
	s.byHash[sha256.Sum256([]byte(id))] = sess
	return id, sess
}

// forgetOldest drops the expired sessions or, when none is, the one that
// expires first. The caller holds s.mu.
func (s *sessions) forgetOldest() {
	now := s.now()
	var oldest [sha256.Size]byte
	var oldestAt time.Time
	for k, sess := range s.byHash {
		if !now.Before(sess.expires) {
			delete(s.byHash, k)
			continue
		}
		if oldestAt.IsZero() || sess.expires.Before(oldestAt) {
			oldest, oldestAt = k, sess.expires
		}
	}
	if len(s.byHash) >= maxSessions {
		delete(s.byHash, oldest)
	}
}

// lookup returns the live session of a cookie value.
func (s *sessions) lookup(id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byHash[key]
	if !ok {
		return nil, false
	}
	if !s.now().Before(sess.expires) {
		delete(s.byHash, key)
		return nil, false
	}
	return sess, true
}

// end ends the session of a cookie value.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byHash, sha256.Sum256([]byte(id)))
}

// sessionKey is the context key of the session a request came with.
type sessionKey struct{}

// withSession returns r carrying sess.
func withSession(r *http.Request, sess *session) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
}

// sessionOf is the login session r came with, if any.
func sessionOf(r *http.Request) (*session, bool) {
	sess, ok := r.Context().Value(sessionKey{}).(*session)
	return sess, ok
}
