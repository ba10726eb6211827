package daemon

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
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
