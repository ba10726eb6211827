package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// HTTPClient is how gpuwatch calls a server that wants credentials (a
// fleet's Prometheus): a bearer token or basic auth, and the TLS to trust
// the server and, for mutual TLS, to show it a certificate. Files named
// here are read again at each request, so rotated tokens work.
type HTTPClient struct {
	BearerToken     string
	BearerTokenFile string
	BasicAuth       BasicAuth
	TLS             ClientTLS
}

// BasicAuth is a user name and its password, or a file holding it.
type BasicAuth struct {
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

// set reports whether any basic-auth field is set.
func (b *BasicAuth) set() bool { return *b != BasicAuth{} }

// ClientTLS is what a client trusts and shows: PEM files.
type ClientTLS struct {
	CAFile             string `yaml:"ca_file"`   // the CA to trust besides the system's
	CertFile           string `yaml:"cert_file"` // a client certificate, with key_file
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"` // the name to verify the certificate against
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// secretFileLimit is the largest token or password file read.
const secretFileLimit = 4 << 10

// problems says what is wrong with the client settings under section
// (such as source.prometheus): keys name the setting, and the messages
// never quote a secret.
func (c *HTTPClient) problems(section string) []settingProblem {
	var out []settingProblem
	add := func(key, format string, args ...any) {
		out = append(out, settingProblem{keys: strings.Split(key, "."), msg: section + "." + fmt.Sprintf(format, args...)})
	}
	switch {
	case c.BearerToken != "" && c.BearerTokenFile != "":
		add("bearer_token_file", "bearer_token_file: set only one of bearer_token and bearer_token_file")
	case (c.BearerToken != "" || c.BearerTokenFile != "") && c.BasicAuth.set():
		add("basic_auth", "basic_auth: set a bearer token or basic_auth, not both")
	case c.BearerTokenFile != "":
		if _, err := readSecretFile(c.BearerTokenFile); err != nil {
			add("bearer_token_file", "bearer_token_file: %v", err)
		}
	}
	if b := &c.BasicAuth; b.set() {
		switch {
		case b.Username == "":
			add("basic_auth", "basic_auth needs a username")
		case b.Password != "" && b.PasswordFile != "":
			add("basic_auth.password_file", "basic_auth: set only one of password and password_file")
		case b.Password == "" && b.PasswordFile == "":
			add("basic_auth", "basic_auth needs password (write it as ${ENV}) or password_file")
		case b.PasswordFile != "":
			if _, err := readSecretFile(b.PasswordFile); err != nil {
				add("basic_auth.password_file", "basic_auth.password_file: %v", err)
			}
		}
	}
	if _, err := c.TLS.config(); err != nil {
		add("tls", "tls: %v", err)
	}
	return out
}

// settingProblem is a problem with the setting at keys below a section.
type settingProblem struct {
	keys []string
	msg  string
}

// readSecretFile reads a token or password file, trimmed; an empty one is
// an error.
func readSecretFile(path string) (string, error) {
	b, err := readSmallFile(path, secretFileLimit)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// config builds the TLS settings; nil when nothing is set.
func (t *ClientTLS) config() (*tls.Config, error) {
	if *t == (ClientTLS{}) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := readSmallFile(t.CAFile, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return nil, fmt.Errorf("cert_file and key_file go together: the client certificate and its private key")
	case t.CertFile != "":
		certPEM, err := readSmallFile(t.CertFile, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("cert_file: %w", err)
		}
		keyPEM, err := readSmallFile(t.KeyFile, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("key_file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("cert_file and key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Client makes the HTTP client, and secrets: the credentials it sends
// now, to cut out of errors.
func (c *HTTPClient) Client() (client *http.Client, secrets func() []string, err error) {
	tlsConfig, err := c.TLS.config()
	if err != nil {
		return nil, nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	a := &authorizer{cfg: *c, next: transport}
	if err := a.refresh(); err != nil {
		return nil, nil, err
	}
	return &http.Client{Transport: a}, a.secrets, nil
}

// authorizer adds the credentials to each request.
type authorizer struct {
	cfg  HTTPClient
	next http.RoundTripper
	mu   sync.Mutex
	// token and password are the credentials, read again from their
	// files at each request; sent remembers every value sent.
	token, password string
	sent            []string
}

func (a *authorizer) refresh() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.token, a.password = a.cfg.BearerToken, a.cfg.BasicAuth.Password
	var err error
	if f := a.cfg.BearerTokenFile; f != "" {
		if a.token, err = readSecretFile(f); err != nil {
			return fmt.Errorf("read bearer_token_file: %w", err)
		}
	}
	if f := a.cfg.BasicAuth.PasswordFile; f != "" {
		if a.password, err = readSecretFile(f); err != nil {
			return fmt.Errorf("read basic_auth.password_file: %w", err)
		}
	}
	for _, s := range []string{a.token, a.password} {
		if s != "" && !slices.Contains(a.sent, s) {
			a.sent = append(a.sent, s)
		}
	}
	return nil
}

func (a *authorizer) secrets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent...)
}

// RoundTrip sends r with the credentials; r itself is not changed.
func (a *authorizer) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := a.refresh(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	token, user, password := a.token, a.cfg.BasicAuth.Username, a.password
	a.mu.Unlock()
	if token == "" && user == "" {
		return a.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	} else {
		r.SetBasicAuth(user, password)
	}
	return a.next.RoundTrip(r)
}

// CloseIdleConnections lets go of the transport's idle connections.
func (a *authorizer) CloseIdleConnections() {
	if c, ok := a.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
