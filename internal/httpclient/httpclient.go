// Package httpclient is the client side of gpuwatch's HTTP connections to
// the engines a fleet already runs (Alertmanager, Prometheus): a bearer
// token or basic auth, each written in the config or read from a file, and
// TLS with a CA, a client certificate and insecure_skip_verify, shaped as
// Prometheus's own configs shape them. It checks the settings, saying what
// is wrong field by field, and builds the client.
//
// Token and password files are read again at every request, so a token
// that is rotated on disk (a Kubernetes service account's) keeps working.
package httpclient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/secretfile"
)

// Settings are the credentials and TLS of the requests to one service.
// Config blocks hold the fields under their own names (bearer_token,
// bearer_token_file, basic_auth, tls) and build Settings from them.
type Settings struct {
	// BearerToken is sent as "Authorization: Bearer TOKEN"; a secret.
	BearerToken string
	// BearerTokenFile names a file that holds the token instead.
	BearerTokenFile string
	BasicAuth       *BasicAuth
	TLS             *TLS
}

// BasicAuth is a user name and password sent as "Authorization: Basic".
type BasicAuth struct {
	Username string `yaml:"username"`
	// Password is a secret; PasswordFile names a file that holds it instead.
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

// TLS configures the client side of TLS, PEM files.
type TLS struct {
	// CAFile holds the certificates that sign the server's, in place of
	// the system's.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate and its key, for a
	// server that asks for one.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name to verify the server's certificate against,
	// when it is not the URL's host (a proxy, an IP address).
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any server certificate: for tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// Problem is one thing wrong with the settings: the field it is about, as
// a path below the block that holds them ("basic_auth.password_file"),
// and what to do.
type Problem struct {
	Field string
	Text  string
}

// maxSecretFile and maxPEMFile bound what a file the settings name may
// hold: a config that names /dev/zero or a log by mistake gets an error,
// not a hang.
const (
	maxSecretFile = 4 << 10
	maxPEMFile    = 1 << 20
)

// Check returns every problem with the settings; none when they are
// usable. It reads the files they name. No problem quotes a secret.
func (s *Settings) Check() []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Text: fmt.Sprintf(format, args...)})
	}
	switch {
	case s.BearerToken != "" && s.BearerTokenFile != "":
		add("bearer_token_file", "set only one of bearer_token and bearer_token_file")
	case s.BearerTokenFile != "":
		if _, err := readSecret(s.BearerTokenFile); err != nil {
			add("bearer_token_file", "%v", err)
		}
	case strings.ContainsAny(s.BearerToken, "\r\n"):
		add("bearer_token", "has a line break: write the token alone")
	}
	if b := s.BasicAuth; b != nil {
		if s.BearerToken != "" || s.BearerTokenFile != "" {
			add("basic_auth", "set only one of a bearer token and basic_auth: a request carries one Authorization header")
		}
		if b.Username == "" {
			add("basic_auth", "needs username")
		}
		switch {
		case b.Password != "" && b.PasswordFile != "":
			add("basic_auth.password_file", "set only one of basic_auth.password and basic_auth.password_file")
		case b.PasswordFile != "":
			if _, err := readSecret(b.PasswordFile); err != nil {
				add("basic_auth.password_file", "%v", err)
			}
		case b.Password == "":
			add("basic_auth", "needs password or password_file")
		}
	}
	if t := s.TLS; t != nil {
		if t.CAFile != "" {
			if _, err := loadCA(t.CAFile); err != nil {
				add("tls.ca_file", "%v", err)
			}
		}
		switch {
		case (t.CertFile == "") != (t.KeyFile == ""):
			add("tls", "needs both cert_file and key_file for a client certificate, or neither")
		case t.CertFile != "":
			if _, err := loadKeyPair(t.CertFile, t.KeyFile); err != nil {
				add("tls.cert_file", "%v", err)
			}
		}
	}
	return out
}

// ResolvePaths makes every file the settings name relative to what
// resolve says (the config file's folder).
func (s *Settings) ResolvePaths(resolve func(string) string) {
	s.BearerTokenFile = resolve(s.BearerTokenFile)
	if s.BasicAuth != nil {
		s.BasicAuth.PasswordFile = resolve(s.BasicAuth.PasswordFile)
	}
	if s.TLS != nil {
		s.TLS.CAFile, s.TLS.CertFile, s.TLS.KeyFile = resolve(s.TLS.CAFile), resolve(s.TLS.CertFile), resolve(s.TLS.KeyFile)
	}
}

// Client returns a client that sends the settings' credentials with every
// request, over the settings' TLS, each request bounded by timeout.
func (s *Settings) Client(timeout time.Duration) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	cfg, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	transport.TLSClientConfig = cfg
	return &http.Client{Timeout: timeout, Transport: s.RoundTripper(transport)}, nil
}

// RoundTripper returns base (nil: http.DefaultTransport) with the
// settings' credentials added to every request.
func (s *Settings) RoundTripper(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if s.BearerToken == "" && s.BearerTokenFile == "" && s.BasicAuth == nil {
		return base
	}
	return &authorizer{settings: *s, base: base}
}

// Secrets returns every value an error must not quote: the token and the
// password (as written, or as their files hold them now) and the Basic
// header they make.
func (s *Settings) Secrets() []string {
	out := []string{s.BearerToken}
	if s.BearerTokenFile != "" {
		token, _ := readSecret(s.BearerTokenFile)
		out = append(out, token)
	}
	if b := s.BasicAuth; b != nil {
		password := b.Password
		if b.PasswordFile != "" {
			password, _ = readSecret(b.PasswordFile)
		}
		out = append(out, b.Password, password, basicCredential(b.Username, password))
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

func (s *Settings) tlsConfig() (*tls.Config, error) {
	t := s.TLS
	if t == nil {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pool, err := loadCA(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		pair, err := loadKeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// authorizer adds the Authorization header to each request.
type authorizer struct {
	settings Settings
	base     http.RoundTripper
}

func (a *authorizer) RoundTrip(req *http.Request) (*http.Response, error) {
	value, err := a.header()
	if err != nil {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", value)
	return a.base.RoundTrip(req)
}

func (a *authorizer) header() (string, error) {
	s := &a.settings
	if b := s.BasicAuth; b != nil {
		password := b.Password
		if b.PasswordFile != "" {
			var err error
			if password, err = readSecret(b.PasswordFile); err != nil {
				return "", fmt.Errorf("basic_auth.password_file: %w", err)
			}
		}
		return "Basic " + basicCredential(b.Username, password), nil
	}
	token := s.BearerToken
	if s.BearerTokenFile != "" {
		var err error
		if token, err = readSecret(s.BearerTokenFile); err != nil {
			return "", fmt.Errorf("bearer_token_file: %w", err)
		}
	}
	return "Bearer " + token, nil
}

func basicCredential(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// readSecret reads a token or password file, trimmed of the line break
// editors add; an empty one is an error.
func readSecret(path string) (string, error) {
	b, err := secretfile.Read(path, maxSecretFile)
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	switch {
	case secret == "":
		return "", fmt.Errorf("%s is empty", path)
	case strings.ContainsAny(secret, "\r\n"):
		return "", fmt.Errorf("%s holds more than one line: put the secret alone in it", path)
	}
	return secret, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	pem, err := secretfile.Read(path, maxPEMFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := secretfile.Read(certFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := secretfile.Read(keyFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		// The error of a bad key quotes no key material.
		return tls.Certificate{}, fmt.Errorf("%s and %s are not a certificate and its key: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// CheckURL says what is wrong with an http(s) URL, as the end of a
// sentence that starts with the setting's name; "" when nothing is. It
// never quotes the URL, which may hold a secret.
func CheckURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "is not a valid URL: check for spaces or stray characters"
	case u.Scheme == "":
		return "must start with http:// or https://"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("must start with http:// or https://, not %q", u.Scheme+":")
	case u.Host == "":
		return "has no host: write it as https://host/path"
	}
	return ""
}
