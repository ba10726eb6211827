package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
)

// apiClient talks to a running daemon's HTTP API.
type apiClient struct {
	base   string
	client *http.Client
	// authorize adds the credentials to a request; nil sends none.
	authorize func(*http.Request)
}

// apiFlags are the flags of a command that talks to the running daemon:
// where it listens and the credentials its server section asks for.
type apiFlags struct {
	server, config                    *string
	tokenFile, user, password, caFile *string
}

// serverFlags adds --server, --config and the credential flags to a
// command that talks to the daemon.
func serverFlags(fs *flag.FlagSet) *apiFlags {
	return serverFlagsFor(fs, "the config of the running gpuwatch, to find its address, TLS and API token")
}

// serverFlagsFor is serverFlags with what --config is for said otherwise.
func serverFlagsFor(fs *flag.FlagSet, configUsage string) *apiFlags {
	return &apiFlags{
		server:    fs.String("server", "", "the running gpuwatch's address, host:port or https://host:port (default: server.listen of --config, else "+config.DefaultListen+")"),
		config:    fs.String("config", "", configUsage),
		tokenFile: fs.String("token-file", "", "a file holding the API token (default: server.bearer_token or server.bearer_token_file of --config)"),
		user:      fs.String("user", "", "a user of server.basic_auth_users, with --password-file"),
		password:  fs.String("password-file", "", "a file holding --user's password"),
		caFile:    fs.String("ca-file", "", "the CA (or self-signed) certificate to trust for https (default: server.tls.cert_file of --config)"),
	}
}

// client makes the API client the flags describe. It reads only the
// server: part of --config: the daemon's other settings, and the secrets
// in its environment they name, are not the client's.
func (f *apiFlags) client(env *Env) (*apiClient, error) {
	srv := config.Server{}
	if *f.config != "" {
		cfg, err := loadConfigParts(*f.config, env, config.PartServer)
		if err != nil {
			return nil, err
		}
		srv = cfg.Server
	}
	return newAPIClient(env, *f.server, &srv, credentials{tokenFile: *f.tokenFile, user: *f.user, passwordFile: *f.password, caFile: *f.caFile})
}

// credentials are what a user passes on the command line to prove who
// they are; the server section of a config fills in the rest.
type credentials struct {
	tokenFile, user, passwordFile, caFile string
}

// newAPIClient makes a client of the daemon at addr (default: srv.Listen),
// with the token, TLS and basic auth that creds and srv give.
func newAPIClient(env *Env, addr string, srv *config.Server, creds credentials) (*apiClient, error) {
	if addr == "" {
		addr = clientAddr(srv.Listen)
	}
	tlsConfig, err := clientTLS(srv, creds.caFile)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(addr, "://") {
		scheme := "http://"
		if tlsConfig != nil {
			scheme = "https://"
		}
		addr = scheme + addr
	}
	authorize, err := clientAuth(srv, creds)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return &apiClient{base: strings.TrimSuffix(addr, "/"), authorize: authorize,
		client: &http.Client{Timeout: 10 * time.Second, Transport: transport}}, nil
}

// waiting returns the client with its requests bounded by d: a command
// that works without a daemon asks it briefly.
func (c *apiClient) waiting(d time.Duration) *apiClient {
	quick := *c
	quick.client = &http.Client{Timeout: d, Transport: c.client.Transport}
	return &quick
}

// clientAddr is where a client reaches a daemon listening on listen: on
// this machine when the daemon listens on every interface.
func clientAddr(listen string) string {
	if listen == "" {
		return config.DefaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// clientTLS trusts caFile, or the daemon's own certificate (a
// self-signed one is its own CA), besides the system's CAs; nil when the
// daemon speaks plain HTTP as far as the client knows.
func clientTLS(srv *config.Server, caFile string) (*tls.Config, error) {
	if caFile == "" && srv.TLS != nil {
		caFile = srv.TLS.CertFile
	}
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, userErrf("--ca-file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// clientAuth returns what adds the credentials to a request: --user with
// --password-file, else the token of --token-file or of the config.
func clientAuth(srv *config.Server, creds credentials) (func(*http.Request), error) {
	if creds.user != "" {
		if creds.passwordFile == "" {
			return nil, userErrf("--user needs --password-file: a file holding the password (never the password itself on the command line)")
		}
		b, err := os.ReadFile(creds.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("--password-file: %w", err)
		}
		user, password := creds.user, strings.TrimRight(string(b), "\r\n")
		return func(r *http.Request) { r.SetBasicAuth(user, password) }, nil
	}
	token := ""
	if creds.tokenFile != "" {
		b, err := os.ReadFile(creds.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	} else if srv.BearerToken != "" || srv.BearerTokenFile != "" {
		t, err := srv.Token()
		if err != nil {
			return nil, userErrf("%v: run as a user who can read it, or pass --token-file", err)
		}
		token = t
	}
	if token == "" {
		return nil, nil
	}
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, nil
}

// do sends a request and decodes the JSON answer into out; an error answer
// becomes an error with the daemon's message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return userErrf("--server %q is not a valid address: %v", c.base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		if resp.StatusCode < 500 {
			return userErrf("%s", e.Error)
		}
		return fmt.Errorf("gpuwatch at %s: %s", c.base, e.Error)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// getBytes GETs path and returns the answer's body (up to 16 MiB: a
// picture), or an error with the answer's text when it is not a 2xx.
func (c *apiClient) getBytes(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return nil, userErrf("--server %q is not a valid address: %v", c.base, err)
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("gpuwatch at %s: %s: %s", c.base, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// send adds the credentials and sends req. A failure names the daemon's
// address, and what to check when TLS is the trouble.
func (c *apiClient) send(req *http.Request) (*http.Response, error) {
	if c.authorize != nil {
		c.authorize(req)
	}
	resp, err := c.client.Do(req)
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &certErr):
		return nil, fmt.Errorf("gpuwatch at %s: its TLS certificate is not trusted (%v): pass --ca-file, or --config with its server.tls", c.base, certErr.Err)
	case err != nil:
		return nil, fmt.Errorf("cannot reach gpuwatch at %s: is `gpuwatch run` running there? (set --server or --config)", c.base)
	}
	return resp, nil
}
