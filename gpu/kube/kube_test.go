package kube_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/kube"
	"github.com/gpuwatch/gpuwatch/gpu/kube/kubetest"
)

const (
	trainUID    = "5e3c2a1b-7d4f-4a8e-9b0c-1d2e3f4a5b6c"
	notebookUID = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
	elsewhere   = "9a8b7c6d-5e4f-4321-8765-0a1b2c3d4e5f"
	laterUID    = "11111111-2222-4333-8444-555555555555"
)

// cluster is two GPU nodes' pods: a training job and a notebook on
// gpu-node-1, another job on gpu-node-2.
func cluster() []kubetest.Pod {
	return []kubetest.Pod{
		{Node: "gpu-node-1", Namespace: "ml-team", Name: "train-llama-0", UID: trainUID,
			Labels: map[string]string{"owner": "alice", "team": "nlp", "pod-template-hash": "7d9f8c6b5"}},
		{Node: "gpu-node-1", Namespace: "vision", Name: "jupyter-bob-0", UID: notebookUID,
			Labels: map[string]string{"owner": "bob", "example.org/cost-center": "cv-42"}},
		{Node: "gpu-node-2", Namespace: "ml-team", Name: "train-llama-1", UID: elsewhere,
			Labels: map[string]string{"owner": "carol"}},
	}
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logBuffer is a log that goroutines write to.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newPods makes the Pods of node gpu-node-1 on the server, with a clock
// the test moves and a log it reads.
func newPods(t *testing.T, s *kubetest.Server, keys ...string) (*kube.Pods, *clock, *logBuffer) {
	t.Helper()
	c := &clock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	logs := &logBuffer{}
	o := s.Options("gpu-node-1", keys...)
	o.Now, o.Logger = c.Now, slog.New(slog.NewTextHandler(logs, nil))
	p, err := kube.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, c, logs
}

// lookup asks for a pod, waits for the list that starts (if one does),
// and asks again.
func lookup(p *kube.Pods, uid string) (ns, name string, labels gpu.PodLabels, ok bool) {
	p.Pod(uid)
	kube.Settle(p)
	return p.Pod(uid)
}

func TestPodsNamesThePodsOfTheNodeWithTheirLabels(t *testing.T) {
	s := kubetest.NewServer(t)
	s.SetPods(cluster()...)
	p, _, logs := newPods(t, s, "example.org/cost-center", "owner")
	if _, _, _, ok := p.Pod(trainUID); ok {
		t.Errorf("a pod is known before the first list")
	}
	ns, name, labels, ok := lookup(p, trainUID)
	if ns != "ml-team" || name != "train-llama-0" || labels != "owner=alice" || !ok {
		t.Errorf("Pod(train) = %q, %q, %q, %v; want ml-team, train-llama-0, owner=alice (the keys asked for alone), true", ns, name, labels, ok)
	}
	if _, _, labels, _ := p.Pod(notebookUID); labels != "example.org/cost-center=cv-42,owner=bob" {
		t.Errorf("Pod(notebook) labels = %q, want example.org/cost-center=cv-42,owner=bob", labels)
	}
	if _, _, _, ok := p.Pod(strings.ToUpper(notebookUID)); !ok {
		t.Errorf("a UID in capitals is not found")
	}
	reqs := s.Requests()
	if _, _, _, ok := p.Pod(elsewhere); ok {
		t.Errorf("a pod of another node is named")
	}
	want := kubetest.Request{Path: "/api/v1/pods", FieldSelector: "spec.nodeName=gpu-node-1", ResourceVersion: "0",
		Accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", Authorized: true}
	if len(reqs) != 1 || reqs[0] != want {
		t.Errorf("requests = %+v, want one: %+v", reqs, want)
	}
	if logs.String() != "" {
		t.Errorf("a list that works logs:\n%s", logs)
	}
}

func TestPodsListAgainOnlyWhenDue(t *testing.T) {
	s := kubetest.NewServer(t)
	s.SetPods(cluster()...)
	p, c, _ := newPods(t, s, "owner")
	lookup(p, trainUID)
	// Samples every 5 s ask for the same pods: no list until the
	// refresh.
	for range 11 {
		c.advance(5 * time.Second)
		if _, _, _, ok := p.Pod(trainUID); !ok {
			t.Fatal("a listed pod is forgotten")
		}
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("lookups of known pods within the refresh listed %d times, want once", n)
	}
	// A pod that starts is found at the next lookup after the retry.
	s.SetPods(append(cluster(), kubetest.Pod{Node: "gpu-node-1", Namespace: "ml-team", Name: "eval-0", UID: laterUID,
		Labels: map[string]string{"owner": "dave"}})...)
	c.advance(4 * time.Second) // 59 s after the list
	if _, _, _, ok := p.Pod(laterUID); ok {
		t.Fatal("a pod is known before it is listed")
	}
	if _, _, labels, ok := lookup(p, laterUID); labels != "owner=dave" || !ok {
		t.Errorf("a pod that started later: labels %q, %v; want owner=dave, true", labels, ok)
	}
	// A pod the API server does not name asks again no sooner than the
	// retry.
	for range 5 {
		lookup(p, elsewhere)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("misses within the retry listed %d times in all, want 2", n)
	}
	c.advance(kube.DefaultRetry)
	lookup(p, elsewhere)
	// A label that changes shows after the refresh.
	s.SetPods(kubetest.Pod{Node: "gpu-node-1", Namespace: "ml-team", Name: "train-llama-0", UID: trainUID, Labels: map[string]string{"owner": "erin"}})
	c.advance(kube.DefaultRefresh)
	if _, _, labels, _ := lookup(p, trainUID); labels != "owner=erin" {
		t.Errorf("after the refresh, labels = %q, want owner=erin", labels)
	}
}

func TestPodsSayOnceThatTheAPIServerIsDown(t *testing.T) {
	s := kubetest.NewServer(t)
	s.SetPods(cluster()...)
	// A careless proxy in front of the API server quotes the request's
	// credentials in its answer.
	s.Fail(http.StatusBadGateway, "upstream refused the request with $AUTH")
	p, c, logs := newPods(t, s, "owner")
	for range 5 {
		if _, _, _, ok := lookup(p, trainUID); ok {
			t.Fatal("a pod is named while the API server fails")
		}
		c.advance(kube.DefaultRetry)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("5 failed lists logged %d warnings, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "502 Bad Gateway") {
		t.Errorf("the warning does not say what the API server answered:\n%s", logs)
	}
	s.Fail(0, "")
	if _, _, labels, ok := lookup(p, trainUID); labels != "owner=alice" || !ok {
		t.Errorf("once the API server answers again: %q, %v; want owner=alice, true", labels, ok)
	}
	if !strings.Contains(logs.String(), "level=INFO") || !strings.Contains(logs.String(), "answers again") {
		t.Errorf("the recovery is not logged:\n%s", logs)
	}
	// A failure after a list that worked keeps the pods listed.
	s.Fail(http.StatusServiceUnavailable, "etcd is down")
	c.advance(kube.DefaultRefresh)
	if _, _, labels, _ := lookup(p, trainUID); labels != "owner=alice" {
		t.Errorf("after a failed refresh: labels %q, want those of the last list, owner=alice", labels)
	}
	if strings.Contains(logs.String(), s.Token) {
		t.Errorf("the log holds the service account's token:\n%s", logs)
	}
}

func TestPodsSayWhyTheAPIServerRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(s *kubetest.Server)
		want  string
	}{
		{"wrong token", func(s *kubetest.Server) {
			if err := os.WriteFile(s.TokenFile, []byte("a-token-of-another-cluster"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "refused the service account's token: 401 Unauthorized"},
		{"no right to list pods", func(s *kubetest.Server) {
			s.Fail(http.StatusForbidden, kubetest.Forbidden("gpuwatch", "gpuwatch-agent"))
		},
			`may not list pods: 403 Forbidden: \"pods is forbidden: User \\\"system:serviceaccount:gpuwatch:gpuwatch-agent\\\" cannot list resource`},
		{"no token", func(s *kubetest.Server) { os.Remove(s.TokenFile) }, "automountServiceAccountToken"},
		{"a certificate of another CA", func(s *kubetest.Server) {
			if err := os.WriteFile(s.CAFile, otherCA(t), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "certificate signed by unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kubetest.NewServer(t)
			s.SetPods(cluster()...)
			tt.setup(s)
			p, _, logs := newPods(t, s, "owner")
			if _, _, _, ok := lookup(p, trainUID); ok {
				t.Errorf("a pod is named while the API server refuses")
			}
			if !strings.Contains(logs.String(), tt.want) {
				t.Errorf("the log does not say %q:\n%s", tt.want, logs)
			}
			if strings.Contains(logs.String(), s.Token) {
				t.Errorf("the log holds the service account's token:\n%s", logs)
			}
		})
	}
}

// otherCA is the PEM certificate of a CA that signed nothing the
// server has.
func otherCA(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another cluster's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestInCluster(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	o, err := kube.InCluster(env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}), "gpu-node-1")
	want := kube.Options{API: "https://10.96.0.1:443", TokenFile: kube.TokenFile, CAFile: kube.CAFile, Node: "gpu-node-1"}
	if err != nil || o.API != want.API || o.TokenFile != want.TokenFile || o.CAFile != want.CAFile || o.Node != want.Node {
		t.Errorf("InCluster = %+v, %v; want %+v", o, err, want)
	}
	if o, _ := kube.InCluster(env(map[string]string{"KUBERNETES_SERVICE_HOST": "fd00::1"}), "n"); o.API != "https://[fd00::1]:443" {
		t.Errorf("InCluster on IPv6 without a port: API %q, want https://[fd00::1]:443", o.API)
	}
	if _, err := kube.InCluster(env(nil), "gpu-node-1"); !errors.Is(err, kube.ErrNotInCluster) {
		t.Errorf("InCluster outside a cluster: %v, want ErrNotInCluster", err)
	}
	if _, err := kube.InCluster(env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"}), ""); err == nil || !strings.Contains(err.Error(), "NODE_NAME") {
		t.Errorf("InCluster without the node: %v, want an error that names NODE_NAME", err)
	}
}

func TestNewNeedsTheCA(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{filepath.Join(dir, "missing"), bad} {
		if _, err := kube.New(kube.Options{API: "https://10.96.0.1:443", Node: "n", CAFile: ca}); err == nil {
			t.Errorf("New with CA file %s: no error", ca)
		}
	}
}

func BenchmarkPodKnown(b *testing.B) {
	s := kubetest.NewServer(b)
	s.SetPods(cluster()...)
	p, err := kube.New(s.Options("gpu-node-1", "owner"))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, _, _, ok := lookup(p, trainUID); !ok {
		b.Fatal("not found")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := p.Pod(trainUID); !ok {
			b.Fatal("not found")
		}
	}
}

// TestTheTokenNeverReachesAnError: an answer that quotes the request's
// credentials (a careless proxy) is reported without the token.
func TestTheTokenNeverReachesAnError(t *testing.T) {
	s := kubetest.NewServer(t)
	s.Fail(http.StatusBadGateway, "upstream refused the request with $AUTH")
	p, _, logs := newPods(t, s, "owner")
	err := p.Refresh(t.Context())
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("Refresh: error %v, want the API server's 502", err)
	}
	if strings.Contains(err.Error(), s.Token) || strings.Contains(logs.String(), s.Token) {
		t.Errorf("the token reached the error or the log:\nerror: %v\nlog: %s", err, logs)
	}
	if !strings.Contains(err.Error(), "Bearer <token>") {
		t.Errorf("Refresh: error %v, want the quoted credentials cut out as <token>", err)
	}
}
