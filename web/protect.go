package web

import "net/http"

// ContentSecurityPolicy lets the page load its own files and talk to its
// own server only: no inline script or style, no frame around it, forms
// post to this server.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Protect adds the headers every answer carries (the Content-Security-
// Policy, no sniffing, no framing, no referrer, and Cache-Control:
// no-store, which the page's own files, open to all, replace with
// no-cache: no cache keeps what credentials let see) and refuses, with 403, a
// request that changes state (POST, PUT, PATCH, DELETE) which a browser
// sends for a page of another origin: a site cannot make a visitor's
// browser add silences on a gpuwatch it reaches, with or without
// credentials. Programs (curl, the CLI, Slack) send none of the headers
// that mark a browser's cross-origin request and pass.
func Protect(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "refused: a browser sent this request for a page of another site; "+
			"change gpuwatch's state from its own page, the CLI or the API")
	}))
	guarded := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		guarded.ServeHTTP(w, r)
	})
}
