package daemon

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/config"
)

// TestDecoyHash: the hash an unknown user's password is checked against
// is a real bcrypt hash at the cost passwords are hashed with, so a wrong
// user costs what a wrong password does.
func TestDecoyHash(t *testing.T) {
	if err := bcrypt.CompareHashAndPassword([]byte(decoyHash), []byte("gpuwatch decoy")); err != nil {
		t.Fatalf("the decoy is not a bcrypt hash of \"gpuwatch decoy\": %v", err)
	}
	if cost, err := bcrypt.Cost([]byte(decoyHash)); err != nil || cost != bcrypt.DefaultCost {
		t.Errorf("the decoy's cost is %d (%v), want bcrypt.DefaultCost %d", cost, err, bcrypt.DefaultCost)
	}
}

// TestFailuresRefill: a client may fail failureBurst times in a row, then
// waits; its allowance refills by one every failureRefill; the clients
// followed are bounded, the others sharing one allowance.
func TestFailuresRefill(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	f := failures{now: func() time.Time { return now }, clients: map[string]*allowance{}}
	for i := range failureBurst {
		if wait := f.blocked("10.0.0.1"); wait != 0 {
			t.Fatalf("failure %d: blocked for %v, want a check", i+1, wait)
		}
		f.add("10.0.0.1")
	}
	if wait := f.blocked("10.0.0.1"); wait != failureRefill {
		t.Errorf("after %d failures: blocked for %v, want %v", failureBurst, wait, failureRefill)
	}
	if wait := f.blocked("10.0.0.2"); wait != 0 {
		t.Errorf("another client: blocked for %v, want none", wait)
	}
	now = now.Add(failureRefill / 2)
	if wait := f.blocked("10.0.0.1"); wait != failureRefill/2 {
		t.Errorf("half a refill later: blocked for %v, want %v", wait, failureRefill/2)
	}
	now = now.Add(failureRefill / 2)
	if wait := f.blocked("10.0.0.1"); wait != 0 {
		t.Errorf("a refill later: blocked for %v, want a check", wait)
	}
	f.forget("10.0.0.1")
	if _, ok := f.clients["10.0.0.1"]; ok {
		t.Errorf("forget left the client's failures")
	}
	for i := range maxClients + 100 {
		f.add(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	if len(f.clients) > maxClients+1 {
		t.Errorf("%d clients followed, want at most %d and the shared one", len(f.clients), maxClients)
	}
}

// TestAuthenticateAfterTheWait: once a throttled client's wait is over,
// the token lets it in (its scheme in any case) and clears its failures,
// so a wrong password right after counts as the first of a new run.
func TestAuthenticateAfterTheWait(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	token := "0123456789abcdef0123456789abcdef"
	a, err := newAuthenticator(&config.Server{BearerToken: token}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	req := func(auth string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/status", nil)
		r.Header.Set("Authorization", auth)
		return r
	}
	for range failureBurst {
		if v, _ := a.authenticate(req("Bearer wrong")); v != refused {
			t.Fatalf("a wrong token: %v, want refused", v)
		}
	}
	if v, wait := a.authenticate(req("Bearer " + token)); v != tooManyFailures || wait != failureRefill {
		t.Errorf("the token while throttled: %v, wait %v; want tooManyFailures, %v", v, wait, failureRefill)
	}
	now = now.Add(failureRefill)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		if v, _ := a.authenticate(req(scheme + " " + token)); v != accepted {
			t.Errorf("%s <token> after the wait: %v, want accepted", scheme, v)
		}
	}
	if _, ok := a.failures.clients["192.0.2.1"]; ok {
		t.Errorf("the token left the client's failures")
	}
}

// TestClientOf: a request from a trusted proxy is from the last address
// its X-Forwarded-For names that is not a trusted proxy's; garbage there
// makes the proxy the client; from anywhere else the header is ignored.
func TestClientOf(t *testing.T) {
	a, err := newAuthenticator(&config.Server{BearerToken: "0123456789abcdef0123456789abcdef",
		TrustedProxies: []string{"10.0.0.0/8", "192.0.2.1", "2001:db8::/32"}}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote    string
		forwarded []string
		want      string
	}{
		{"198.51.100.1:4000", []string{"203.0.113.7"}, "198.51.100.1"},
		{"192.0.2.1:4000", nil, "192.0.2.1"},
		{"192.0.2.1:4000", []string{"203.0.113.7"}, "203.0.113.7"},
		{"192.0.2.1:4000", []string{"1.2.3.4, 203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{"192.0.2.1:4000", []string{"1.2.3.4", "203.0.113.7,10.1.2.3"}, "203.0.113.7"},
		{"192.0.2.1:4000", []string{"10.9.9.9, 10.1.2.3"}, "10.9.9.9"},
		{"192.0.2.1:4000", []string{"203.0.113.7, not-an-address"}, "192.0.2.1"},
		{"[2001:db8::1]:4000", []string{"2001:db8:1::2, 2a00::1"}, "2a00::1"},
		{"[::ffff:192.0.2.1]:4000", []string{"203.0.113.7"}, "203.0.113.7"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		for _, f := range tc.forwarded {
			r.Header.Add("X-Forwarded-For", f)
		}
		if got := a.clientOf(r); got != tc.want {
			t.Errorf("from %s, X-Forwarded-For %q: client %s, want %s", tc.remote, tc.forwarded, got, tc.want)
		}
	}
}
