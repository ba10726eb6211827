// Package kubetest plays the part of the Kubernetes API server that
// gpuwatch uses, over real HTTPS with a CA of its own: GET /api/v1/pods
// with a field selector on the node, for a service account's bearer
// token. It answers as a real API server does (a PodList, or the
// PartialObjectMetadataList asked for, with the metadata gpuwatch does not
// read), refuses a wrong token with 401, and records every request.
package kubetest

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpuwatch/gpuwatch/gpu/kube"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
)

// Pod is a pod the server lists.
type Pod struct {
	Node, Namespace, Name, UID string
	Labels                     map[string]string
	// Mirror is the UID of a static pod's manifest, which the mirror
	// pod's annotation names; "" for other pods.
	Mirror string
}

// Request is what the server was asked.
type Request struct {
	Path, FieldSelector, ResourceVersion, Accept string
	// Authorized is whether it carried the right token.
	Authorized bool
}

// Server is a fake API server. Its zero value is not usable: NewServer.
type Server struct {
	*httptest.Server
	// Token is the service account's token the server takes.
	Token string
	// TokenFile and CAFile hold the token and the server's CA, as a
	// pod's service account mount does.
	TokenFile, CAFile string

	mu       sync.Mutex
	pods     []Pod
	status   int    // when set, the status of every answer
	message  string // the message of a failed answer
	requests []Request
}

// NewServer starts a fake API server, closed when the test ends. It
// serves HTTPS with a certificate of internal/testcert, which its CAFile
// holds, as a cluster's CA signs its API server's.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{Token: "eyJhbGciOiJSUzI1NiJ9.service-account-token-of-the-agent.c2lnbmF0dXJl"}
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s.StartTLS()
	t.Cleanup(s.Close)
	s.TokenFile, s.CAFile = filepath.Join(dir, "token"), certFile
	if err := os.WriteFile(s.TokenFile, []byte(s.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// Options are kube.Options for this server, node and label keys.
func (s *Server) Options(node string, keys ...string) kube.Options {
	return kube.Options{API: s.URL, TokenFile: s.TokenFile, CAFile: s.CAFile, Node: node, Keys: keys}
}

// SetPods replaces the pods of the cluster.
func (s *Server) SetPods(pods ...Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

// Fail makes every answer status (with message, which may quote the
// request's Authorization header as "$AUTH", as a careless proxy would);
// 0 answers again.
func (s *Server) Fail(status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.message = status, message
}

// Requests returns what the server was asked, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := Request{Path: r.URL.Path, FieldSelector: q.Get("fieldSelector"), ResourceVersion: q.Get("resourceVersion"),
		Accept: r.Header.Get("Accept"), Authorized: r.Header.Get("Authorization") == "Bearer "+s.Token}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	pods, status, message := s.pods, s.status, s.message
	s.mu.Unlock()
	switch {
	case !req.Authorized:
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
		return
	case status != 0:
		writeStatus(w, status, strings.ReplaceAll(message, "$AUTH", r.Header.Get("Authorization")))
		return
	case r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods":
		writeStatus(w, http.StatusNotFound, "the server could not find the requested resource")
		return
	}
	node, selected := strings.CutPrefix(req.FieldSelector, "spec.nodeName=")
	metadataOnly := strings.Contains(req.Accept, "as=PartialObjectMetadataList")
	kind, apiVersion := "PodList", "v1"
	if metadataOnly {
		kind, apiVersion = "PartialObjectMetadataList", "meta.k8s.io/v1"
	}
	items := []map[string]any{}
	for _, p := range pods {
		if selected && p.Node != node {
			continue
		}
		meta := map[string]any{
			"name": p.Name, "namespace": p.Namespace, "uid": p.UID, "resourceVersion": "48213",
			"creationTimestamp": "2026-11-29T09:00:00Z",
			"annotations":       map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod"}`},
			"managedFields": []map[string]any{{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{}}}}},
		}
		if p.Labels != nil {
			meta["labels"] = p.Labels
		}
		if p.Mirror != "" {
			meta["annotations"] = map[string]string{"kubernetes.io/config.mirror": p.Mirror, "kubernetes.io/config.source": "file"}
		}
		item := map[string]any{"metadata": meta}
		if !metadataOnly {
			item["spec"] = map[string]any{"nodeName": p.Node, "containers": []map[string]any{{"name": "main", "image": "pytorch/pytorch"}}}
			item["status"] = map[string]any{"phase": "Running"}
		}
		items = append(items, item)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion,
		"metadata": map[string]any{"resourceVersion": "48213"}, "items": items})
}

// writeStatus answers as the API server refuses: a Status object.
func writeStatus(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": http.StatusText(code), "code": code})
}

// Forbidden is the message of the API server refusing a service account
// without the right to list pods.
func Forbidden(namespace, account string) string {
	return fmt.Sprintf(`pods is forbidden: User "system:serviceaccount:%s:%s" cannot list resource "pods" in API group "" at the cluster scope`, namespace, account)
}
