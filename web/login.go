package web

import (
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CSRFHeader is the header a page in a login session sends, with the
// session's token, on every request that changes state.
const CSRFHeader = "X-CSRF-Token"

// PageHeader marks the page's own requests to the API: where a login
// session has ended, they get a bare 401 rather than a challenge that
// would open the browser's password dialog over the page.
const PageHeader = "X-GPUWatch-Page"

// Verifier checks a login form's credentials as the API checks those of
// a request: a user and password (server.basic_auth_users) or, without a
// user, the API token (server.bearer_token), under the same limit on
// wrong tries. r is the login request, for its address. wait, when not
// zero, says the client tried too often: try again after it.
type Verifier func(r *http.Request, user, secret string) (ok bool, wait time.Duration)

//go:embed templates
var templates embed.FS

// loginPage is the login form; Error says why the last try failed.
// It is parsed when first shown: an agent without a login never does.
var loginPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(templates, "templates/login.html"))
})

// maxLoginForm bounds the body of a login.
const maxLoginForm = 16 << 10

// login is the login form and the browser sessions in front of an API
// that asks for credentials.
type login struct {
	server   *Server
	sessions *sessions
	verify   Verifier
	open     http.Handler // the API and page, for a request in a session
	guarded  http.Handler // the same behind the API's own authentication

	refused  atomic.Int64 // logins refused since the last log line
	loggedAt atomic.Int64 // Unix ns of that line
}

// Login puts a login form (GET and POST /login, POST /logout) and browser
// sessions in front of an API that asks for credentials. A request with a
// live session cookie goes to open, as the session's user; a request that
// changes state must then also carry the session's CSRF token in
// CSRFHeader. The page's files are open to all (the login form uses
// them). A browser that asks for the page without credentials is sent to
// the form. Everything else goes to guarded: the API's own credentials
// (bearer, basic) work as before.
func (s *Server) Login(open, guarded http.Handler, verify Verifier) http.Handler {
	l := &login{server: s, sessions: newSessions(s.opts.Now), verify: verify, open: open, guarded: guarded}
	return http.HandlerFunc(l.serveHTTP)
}

func (l *login) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/login":
		l.login(w, r)
		return
	case "/logout":
		l.logout(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/assets/") {
		l.open.ServeHTTP(w, r)
		return
	}
	if sess, _, ok := l.session(r); ok {
		if !safeMethod(r.Method) && !validCSRF(r, sess) {
			writeError(w, http.StatusForbidden, "refused: a change made from the page must carry the page's "+CSRFHeader+"; reload the page")
			return
		}
		l.open.ServeHTTP(w, withSession(r, sess))
		return
	}
	if r.Header.Get("Authorization") == "" {
		if r.URL.Path == "/" && safeMethod(r.Method) {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if r.Header.Get(PageHeader) != "" {
			writeError(w, http.StatusUnauthorized, "the login session has ended: log in again")
			return
		}
	}
	l.guarded.ServeHTTP(w, r)
}

// session is the live session r's cookie names.
func (l *login) session(r *http.Request) (*session, string, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return nil, "", false
	}
	sess, ok := l.sessions.lookup(c.Value)
	return sess, c.Value, ok
}

// safeMethod reports whether a method only reads.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// validCSRF reports whether r carries sess's CSRF token.
func validCSRF(r *http.Request, sess *session) bool {
	got := r.Header.Get(CSRFHeader)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}

// loginForm is what the login page shows.
type loginForm struct {
	User  string
	Error string
}

// login answers GET /login with the form, and POST /login with a session
// cookie and the page, or the form again saying the credentials are wrong.
func (l *login) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if _, _, ok := l.session(r); ok {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		l.form(w, http.StatusOK, loginForm{})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
		if err := r.ParseForm(); err != nil {
			l.form(w, http.StatusBadRequest, loginForm{Error: "The form could not be read: try again."})
			return
		}
		user, secret := strings.TrimSpace(r.PostForm.Get("user")), r.PostForm.Get("password")
		ok, wait := false, time.Duration(0)
		if secret != "" {
			ok, wait = l.verify(r, user, secret)
		}
		switch {
		case wait > 0:
			l.refusedLogin(r)
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			l.form(w, http.StatusTooManyRequests, loginForm{User: user, Error: fmt.Sprintf("Too many wrong tries from this address: try again in %d seconds.", secs)})
			return
		case !ok:
			l.refusedLogin(r)
			l.form(w, http.StatusUnauthorized, loginForm{User: user, Error: "Wrong user or password (or API token): try again."})
			return
		}
		id, _ := l.sessions.start(displayUser(user))
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", MaxAge: int(SessionLifetime / time.Second),
			Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, "use GET for the login form, POST to log in")
	}
}

// displayUser is who a session is: the user, or "token" for a login with
// the API token.
func displayUser(user string) string {
	if user == "" {
		return "token"
	}
	return user
}

// form writes the login page.
func (l *login) form(w http.ResponseWriter, status int, f loginForm) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := loginPage().Execute(w, f); err != nil {
		l.server.opts.Logger.Error("cannot write the login page", "err", err)
	}
}

// refusedLogin logs, at most once a minute, how many logins were refused;
// never what they tried.
func (l *login) refusedLogin(r *http.Request) {
	n := l.refused.Add(1)
	if now := l.server.opts.Now().UnixNano(); now-l.loggedAt.Load() >= int64(time.Minute) {
		l.loggedAt.Store(now)
		l.refused.Store(0)
		l.server.opts.Logger.Warn("browser logins with wrong credentials refused", "logins", n, "last_from", r.RemoteAddr)
	}
}

// logout answers POST /logout: it ends the session (the request must carry
// its CSRF token) and sends the browser to the login form.
func (l *login) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "log out with POST")
		return
	}
	sess, id, ok := l.session(r)
	if ok && !validCSRF(r, sess) {
		writeError(w, http.StatusForbidden, "refused: logging out from the page must carry the page's "+CSRFHeader)
		return
	}
	if ok {
		l.sessions.end(id)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
