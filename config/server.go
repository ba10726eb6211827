package config

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/internal/secretfile"
)

// Server configures the HTTP listener: the API that `gpuwatch silence`,
// `outbox`, `status` and `digest` use, /metrics, /healthz and the Slack
// app's request URLs. Its TLS and authentication follow the web config of
// Prometheus exporters (exporter-toolkit): a certificate and key file,
// basic-auth users with bcrypt hashes, and also a bearer token. A listener
// that other machines reach must have both TLS and authentication.
type Server struct {
	Listen string `yaml:"listen"`
	// TLS serves HTTPS; without it the listener speaks plain HTTP.
	TLS *ServerTLS `yaml:"tls"`
	// BasicAuthUsers maps each user name to the bcrypt hash of its
	// password (gpuwatch hash-password USER gives the line USER: HASH).
	BasicAuthUsers map[string]string `yaml:"basic_auth_users"`
	// BearerToken is a token clients send as "Authorization: Bearer
	// TOKEN" (write it as ${ENV}); a secret. BearerTokenFile names a
	// file that holds it instead.
	BearerToken     string `yaml:"bearer_token"`
	BearerTokenFile string `yaml:"bearer_token_file"`
	// ExternalURL is where people reach this API (https://gpuwatch.example.org),
	// behind a proxy or not: webhook notifications link their charts there
	// (chart_url). "" gives no links. On a loopback listener its host is
	// one the API answers to (see AllowedHosts).
	ExternalURL string `yaml:"external_url"`
	// AllowedHosts are more names a loopback listener answers to, besides
	// localhost, loopback addresses and ExternalURL's host: the names a
	// reverse proxy passes on in Host. A request for any other name is
	// refused, so that a web page cannot reach the API by a name its
	// owner points at 127.0.0.1 (DNS rebinding).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// TrustedProxies are the addresses (203.0.113.7) and networks
	// (10.0.0.0/8) of reverse proxies in front of the API: a request from
	// one of them is from the client its X-Forwarded-For names, so that
	// the limit on wrong passwords counts each client behind the proxy
	// apart.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// Proxies parses TrustedProxies; the config's check reports what does
// not parse.
func (s *Server) Proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range s.TrustedProxies {
		prefix, err := parseProxy(p)
		if err != nil {
			return nil, err
		}
		out = append(out, prefix)
	}
	return out, nil
}

// parseProxy reads an address or a network in CIDR notation.
func parseProxy(text string) (netip.Prefix, error) {
	text = strings.TrimSpace(text)
	if strings.Contains(text, "/") {
		p, err := netip.ParsePrefix(text)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("server.trusted_proxies: %q is not an address or a network: write it like 203.0.113.7 or 10.0.0.0/8", text)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(text)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("server.trusted_proxies: %q is not an address or a network: write it like 203.0.113.7 or 10.0.0.0/8", text)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// AllowedHostNames are the names a loopback listener answers to besides
// localhost and loopback addresses, lower-case: ExternalURL's host and
// AllowedHosts.
func (s *Server) AllowedHostNames() []string {
	var out []string
	if u, err := url.Parse(s.ExternalURL); err == nil && u.Hostname() != "" {
		out = append(out, strings.ToLower(u.Hostname()))
	}
	for _, h := range s.AllowedHosts {
		out = append(out, strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), ".")))
	}
	return out
}

// ChartURL is the link to chart id under ExternalURL; "" without one.
func (s *Server) ChartURL(id string) string {
	if s.ExternalURL == "" || id == "" {
		return ""
	}
	return strings.TrimSuffix(s.ExternalURL, "/") + "/api/v1/charts/" + url.PathEscape(id) + ".png"
}

// ServerTLS is the certificate the listener serves, PEM files.
type ServerTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// MinBearerToken is the shortest bearer token accepted, in bytes.
const MinBearerToken = 16

// Authenticated reports whether the API asks for credentials.
func (s *Server) Authenticated() bool {
	return len(s.BasicAuthUsers) > 0 || s.BearerToken != "" || s.BearerTokenFile != ""
}

// Token returns the bearer token, read from BearerTokenFile when that is
// where it is; "" when there is none.
func (s *Server) Token() (string, error) {
	if s.BearerTokenFile == "" {
		return s.BearerToken, nil
	}
	b, err := readSmallFile(s.BearerTokenFile, 4<<10)
	if err != nil {
		return "", fmt.Errorf("read server.bearer_token_file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// readSmallFile reads a regular file of at most max bytes: a config that
// names /dev/zero, a log or a named pipe by mistake gets an error, not a hang.
func readSmallFile(path string, max int64) ([]byte, error) { return secretfile.Read(path, max) }

// LoadCertificate loads the TLS certificate and key; nil without TLS.
func (s *Server) LoadCertificate() (*tls.Certificate, error) {
	if s.TLS == nil {
		return nil, nil
	}
	certPEM, err := readSmallFile(s.TLS.CertFile, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read server.tls.cert_file: %w", err)
	}
	keyPEM, err := readSmallFile(s.TLS.KeyFile, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read server.tls.key_file: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("server.tls.cert_file and key_file: %w", err)
	}
	return &cert, nil
}

// IsLoopback reports whether a listen address takes connections from this
// machine only. An empty host listens on every interface.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkServer reports a listener that cannot work or that lets anyone on
// the network in. Messages never quote a token or a hash.
func (c *Config) checkServer(at func(...string) *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	s := &c.Server
	// listenProblem reports a listen address that is not HOST:PORT.
	_, _, listenErr := net.SplitHostPort(s.Listen)
	for _, user := range slices.Sorted(maps.Keys(s.BasicAuthUsers)) {
		if _, err := bcrypt.Cost([]byte(s.BasicAuthUsers[user])); err != nil {
			fail(at("server", "basic_auth_users", user), "server.basic_auth_users.%s is not a bcrypt hash: make the line with `gpuwatch hash-password %s`", user, user)
		}
	}
	switch {
	case s.BearerToken != "" && s.BearerTokenFile != "":
		fail(at("server", "bearer_token_file"), "set only one of server.bearer_token and server.bearer_token_file")
	case s.BearerToken != "" || s.BearerTokenFile != "":
		key := "bearer_token"
		if s.BearerTokenFile != "" {
			key = "bearer_token_file"
		}
		token, err := s.Token()
		switch {
		case err != nil:
			fail(at("server", key), "%v", err)
		case len(token) < MinBearerToken:
			fail(at("server", key), "server.%s holds a token of %d bytes, fewer than %d: make a long random one (openssl rand -hex 32)", key, len(token), MinBearerToken)
		}
	}
	if s.TLS != nil {
		switch {
		case s.TLS.CertFile == "" || s.TLS.KeyFile == "":
			fail(at("server", "tls"), "server.tls needs cert_file and key_file: the PEM certificate and its private key")
		default:
			if _, err := s.LoadCertificate(); err != nil {
				fail(at("server", "tls"), "%v", err)
			}
		}
	}
	if s.ExternalURL != "" {
		if u, err := url.Parse(s.ExternalURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			fail(at("server", "external_url"), "server.external_url %q is not where people reach gpuwatch: write it like https://gpuwatch.example.org, without credentials or a query", s.ExternalURL)
		}
	}
	for i, p := range s.TrustedProxies {
		if _, err := parseProxy(p); err != nil {
			fail(nodeAt(at("server"), "trusted_proxies", i), "%v", err)
		}
	}
	for i, h := range s.AllowedHosts {
		if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, " /:@") {
			fail(nodeAt(at("server"), "allowed_hosts", i), "server.allowed_hosts: %q is not a host name: write it like gpuwatch.example.org, without a scheme or port", h)
		}
	}
	if listenErr != nil || IsLoopback(s.Listen) {
		return
	}
	if !s.Authenticated() {
		fail(at("server", "listen"), "server.listen %s takes connections from the network, and the API has no authentication: anyone who reaches it "+
			"can read process users and commands and add or expire silences; set server.bearer_token_file or server.basic_auth_users, "+
			"and server.tls, or listen on 127.0.0.1", s.Listen)
	}
	if s.TLS == nil {
		fail(at("server", "listen"), "server.listen %s takes connections from the network without TLS: passwords and tokens would cross it in clear; "+
			"set server.tls.cert_file and key_file, or listen on 127.0.0.1 behind an HTTPS proxy", s.Listen)
	}
}
