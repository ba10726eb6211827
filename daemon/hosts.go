package daemon

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gpuwatch/gpuwatch/config"
)

// hostGuard answers, on a loopback listener, only the requests whose Host
// names it: localhost (and names under .localhost), loopback addresses,
// server.external_url's host and server.allowed_hosts. A web page cannot
// then reach the API by a name of its own that its owner points at
// 127.0.0.1 (DNS rebinding): without credentials, the default on
// loopback, it could read the GPUs' users and commands and add silences.
// Programs that ask by address (the CLI, curl, probes) pass, and so do
// Slack's requests to /slack/, which carry Slack's signature whatever
// name a tunnel gives them. As Jupyter does. A listener on the network
// needs credentials and TLS, which a rebinding page has neither of, and
// is not guarded.
type hostGuard struct {
	names   map[string]bool
	refused saidOnce // the names refused that the log has said
}

// newHostGuard returns the guard of the server section's listener; nil
// when it listens on the network.
func newHostGuard(s *config.Server) *hostGuard {
	if !config.IsLoopback(s.Listen) {
		return nil
	}
	g := &hostGuard{names: map[string]bool{"localhost": true}}
	for _, name := range s.AllowedHostNames() {
		g.names[name] = true
	}
	return g
}

// allows reports whether a request for host (as Host has it, with or
// without a port) is for this listener.
func (g *hostGuard) allows(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "" {
		return true // HTTP/1.0 has no Host: no browser sends that
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap().IsLoopback()
	}
	return g.names[name] || strings.HasSuffix(name, ".localhost")
}

// wrap refuses, with 403 and what to do, the requests not for this
// listener.
func (g *hostGuard) wrap(logger *slog.Logger, next http.Handler) http.Handler {
	if g == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.allows(r.Host) || strings.HasPrefix(r.URL.Path, "/slack/") {
			next.ServeHTTP(w, r)
			return
		}
		if g.refused.first(strings.ToLower(r.Host)) {
			logger.Warn("refused requests for a host name this gpuwatch is not reached by (a web page pointing its own name at 127.0.0.1?); "+
				"if people or a proxy reach gpuwatch by it, add it to server.allowed_hosts", "host", r.Host, "from", r.RemoteAddr)
		}
		writeError(w, http.StatusForbidden, "refused: this gpuwatch listens on loopback and answers to localhost, loopback addresses, "+
			"server.external_url's host and server.allowed_hosts, not to "+quoteHost(r.Host)+"; if people or a proxy reach it by that name, add it to server.allowed_hosts")
	})
}

// quoteHost quotes a Host for a message, clipped.
func quoteHost(host string) string {
	if len(host) > 100 {
		host = host[:100] + "…"
	}
	return `"` + host + `"`
}
