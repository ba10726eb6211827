package httpclient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/testcert"
)

// writeFile writes text to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	token := writeFile(t, dir, "token", "tok3n-from-file\n")
	empty := writeFile(t, dir, "empty", "\n")
	twoLines := writeFile(t, dir, "two", "a\nb\n")
	cert, key := testcert.Write(t, dir)
	notPEM := writeFile(t, dir, "ca.txt", "not a certificate")
	missing := filepath.Join(dir, "missing")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		s    Settings
		want []string // "field: text"
	}{
		{"nothing", Settings{}, nil},
		{"bearer token", Settings{BearerToken: "t0k3n"}, nil},
		{"token file", Settings{BearerTokenFile: token}, nil},
		{"basic auth", Settings{BasicAuth: &BasicAuth{Username: "gpuwatch", PasswordFile: token}}, nil},
		{"tls", Settings{TLS: &TLS{CAFile: cert, CertFile: cert, KeyFile: key}}, nil},
		{"both tokens", Settings{BearerToken: "t", BearerTokenFile: token},
			[]string{"bearer_token_file: set only one of bearer_token and bearer_token_file"}},
		{"token and basic", Settings{BearerToken: "t", BasicAuth: &BasicAuth{Username: "u", Password: "p"}},
			[]string{"basic_auth: set only one of a bearer token and basic_auth: a request carries one Authorization header"}},
		{"token line break", Settings{BearerToken: "a\r\nX-Evil: 1"}, []string{"bearer_token: has a line break: write the token alone"}},
		{"missing token file", Settings{BearerTokenFile: missing},
			[]string{"bearer_token_file: open " + missing + ": no such file or directory"}},
		{"empty token file", Settings{BearerTokenFile: empty}, []string{"bearer_token_file: " + empty + " is empty"}},
		{"two-line token file", Settings{BearerTokenFile: twoLines},
			[]string{"bearer_token_file: " + twoLines + " holds more than one line: put the secret alone in it"}},
		{"token file is a folder", Settings{BearerTokenFile: dir}, []string{"bearer_token_file: " + dir + " is not a regular file"}},
		{"token file is a pipe", Settings{BearerTokenFile: fifo}, []string{"bearer_token_file: " + fifo + " is not a regular file"}},
		{"basic without user or password", Settings{BasicAuth: &BasicAuth{}},
			[]string{"basic_auth: needs username", "basic_auth: needs password or password_file"}},
		{"basic both passwords", Settings{BasicAuth: &BasicAuth{Username: "u", Password: "p", PasswordFile: token}},
			[]string{"basic_auth.password_file: set only one of basic_auth.password and basic_auth.password_file"}},
		{"ca not PEM", Settings{TLS: &TLS{CAFile: notPEM}}, []string{"tls.ca_file: " + notPEM + " holds no PEM certificate"}},
		{"cert without key", Settings{TLS: &TLS{CertFile: cert}},
			[]string{"tls: needs both cert_file and key_file for a client certificate, or neither"}},
		{"cert and key mixed up", Settings{TLS: &TLS{CertFile: key, KeyFile: cert}},
			[]string{"tls.cert_file: " + key + " and " + cert + " are not a certificate and its key: tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range c.s.Check() {
				got = append(got, p.Field+": "+p.Text)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// authServer records the Authorization header of every request.
type authServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newAuthServer(t *testing.T) *authServer {
	s := &authServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Authorization"))
		s.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func get(t *testing.T, c *http.Client, url string) error {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// TestCredentials: each kind of credential reaches the server as its
// Authorization header, and a token file is read again at each request.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", "first-token\n")
	passwordFile := writeFile(t, dir, "password", "pa55-from-file\n")
	basic := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	srv := newAuthServer(t)
	cases := []struct {
		s    Settings
		want string
	}{
		{Settings{}, ""},
		{Settings{BearerToken: "inline-token"}, "Bearer inline-token"},
		{Settings{BearerTokenFile: tokenFile}, "Bearer first-token"},
		{Settings{BasicAuth: &BasicAuth{Username: "gpuwatch", Password: "pa55"}}, basic("gpuwatch", "pa55")},
		{Settings{BasicAuth: &BasicAuth{Username: "gpuwatch", PasswordFile: passwordFile}}, basic("gpuwatch", "pa55-from-file")},
	}
	for i, c := range cases {
		client, err := c.s.Client(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := get(t, client, srv.URL); err != nil {
			t.Fatal(err)
		}
		if got := srv.Seen()[i]; got != c.want {
			t.Errorf("settings %+v: got Authorization %q, want %q", c.s, got, c.want)
		}
	}
	// A rotated token is sent from the next request on.
	client, _ := (&Settings{BearerTokenFile: tokenFile}).Client(5 * time.Second)
	writeFile(t, dir, "token", "second-token\n")
	if err := get(t, client, srv.URL); err != nil {
		t.Fatal(err)
	}
	if seen := srv.Seen(); seen[len(seen)-1] != "Bearer second-token" {
		t.Errorf("after the token file changed: got %q, want Bearer second-token", seen[len(seen)-1])
	}
	// A token file gone fails the request, saying which setting, not the token.
	os.Remove(tokenFile)
	err := get(t, client, srv.URL)
	if err == nil || !strings.Contains(err.Error(), "bearer_token_file: open "+tokenFile) || strings.Contains(err.Error(), "second-token") {
		t.Errorf("with the token file gone: got %v, want an error naming bearer_token_file", err)
	}
}

// TestTLS: the CA file makes the server's certificate trusted, the client
// certificate is presented, and without the CA the request fails.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var clientCerts [][]*x509.Certificate
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		clientCerts = append(clientCerts, r.TLS.PeerCertificates)
		mu.Unlock()
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	trusted, err := (&Settings{TLS: &TLS{CAFile: certFile, CertFile: certFile, KeyFile: keyFile}}).Client(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, trusted, srv.URL); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	mu.Lock()
	if len(clientCerts) != 1 || len(clientCerts[0]) != 1 {
		t.Errorf("got client certificates %v, want the one configured", clientCerts)
	}
	mu.Unlock()
	plain, _ := (&Settings{}).Client(5 * time.Second)
	if err := get(t, plain, srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: got %v, want a certificate error", err)
	}
	insecure, _ := (&Settings{TLS: &TLS{InsecureSkipVerify: true}}).Client(5 * time.Second)
	if err := get(t, insecure, srv.URL); err != nil {
		t.Errorf("with insecure_skip_verify: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	s := Settings{BearerTokenFile: writeFile(t, dir, "token", "file-token-1\n"),
		BasicAuth: &BasicAuth{Username: "u", PasswordFile: writeFile(t, dir, "pw", "file-password-2\n")}}
	got := s.Secrets()
	for _, want := range []string{"file-token-1", "file-password-2", base64.StdEncoding.EncodeToString([]byte("u:file-password-2"))} {
		if !slices.Contains(got, want) {
			t.Errorf("Secrets: got %q, want %q among them", got, want)
		}
	}
}

func TestResolvePaths(t *testing.T) {
	s := Settings{BearerTokenFile: "token", BasicAuth: &BasicAuth{PasswordFile: "pw"}, TLS: &TLS{CAFile: "ca", CertFile: "crt", KeyFile: "key"}}
	s.ResolvePaths(func(p string) string { return "/etc/gpuwatch/" + p })
	got := []string{s.BearerTokenFile, s.BasicAuth.PasswordFile, s.TLS.CAFile, s.TLS.CertFile, s.TLS.KeyFile}
	want := []string{"/etc/gpuwatch/token", "/etc/gpuwatch/pw", "/etc/gpuwatch/ca", "/etc/gpuwatch/crt", "/etc/gpuwatch/key"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCheckURL(t *testing.T) {
	for raw, want := range map[string]string{
		"http://am:9093":            "",
		"https://user:pw@am/prefix": "",
		"am:9093":                   `must start with http:// or https://, not "am:"`,
		"/api":                      "must start with http:// or https://",
		"http://":                   "has no host: write it as https://host/path",
		"http://am:9093/%zz":        "is not a valid URL: check for spaces or stray characters",
	} {
		if got := CheckURL(raw); got != want {
			t.Errorf("CheckURL(%q): got %q, want %q", raw, got, want)
		}
	}
}
