// Package kube reads the pods of this node from the Kubernetes API
// server, the way a pod of the cluster does (in-cluster: its service
// account's token and CA, and the API server's address in
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT): each pod's
// namespace, name and the few labels gpuwatch is asked for, by the pod's
// UID, which the cgroup of a pod's process names.
//
// It speaks plain HTTP and JSON: one list of the node's pods
// (fieldSelector spec.nodeName), metadata only, served from the API
// server's cache, at most once a refresh (a minute) and, when a process of
// a pod it does not know shows up, once a retry (ten seconds). Lookups
// never wait for the API server: they answer from the last list, and a
// list runs beside them. An API server that cannot be reached, or that
// refuses the service account, is said once in the log; pods are then
// named as without it.
package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
)

// Where a pod finds its service account's credentials.
const (
	TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	CAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Defaults of Options.
const (
	DefaultRefresh = time.Minute
	DefaultRetry   = 10 * time.Second
	DefaultTimeout = 10 * time.Second
)

// Bounds of what is read from the API server.
const (
	// MaxPods is the most pods of one node kept: a node runs 110 by
	// default, a few hundred at most.
	MaxPods = 2048
	// maxList is the largest list answer read, metadata of MaxPods pods
	// with room to spare.
	maxList = 64 << 20
	// maxToken is the largest token file read.
	maxToken = 64 << 10
	// maxStatus is how much of a refusal's body is read for its message.
	maxStatus = 4 << 10
)

// ErrNotInCluster says gpuwatch does not run in a pod of a Kubernetes
// cluster: the API server's address is not in its environment.
var ErrNotInCluster = errors.New("gpuwatch does not run in a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)")

// Options configure Pods.
type Options struct {
	// API is the API server's URL, "https://10.96.0.1:443".
	API string
	// TokenFile holds the bearer token, read again at each list (the
	// kubelet renews a service account's token while the pod runs);
	// CAFile the certificates the API server's is checked against.
	TokenFile, CAFile string
	// Node is the node whose pods are listed.
	Node string
	// Keys are the label keys kept (sorted, distinct, at most
	// gpu.MaxPodLabels); a pod's other labels are not.
	Keys []string
	// Refresh is how old the list may grow; Retry how soon after a list
	// a pod it does not name makes another. Zero: the defaults.
	Refresh, Retry time.Duration
	// Timeout bounds each list; zero: DefaultTimeout.
	Timeout time.Duration
	// Logger gets the API server's failures and recoveries, once each;
	// nil discards them. It never gets the token.
	Logger *slog.Logger
	// Now is the clock lists are timed by; nil: time.Now.
	Now func() time.Time
}

// InCluster returns the Options of a pod of the cluster on node (the
// downward API's spec.nodeName, in NODE_NAME): the API server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the service
// account's token and CA. getenv reads the environment (os.Getenv).
func InCluster(getenv func(string) string, node string) (Options, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return Options{}, ErrNotInCluster
	}
	if port == "" {
		port = "443"
	}
	if node == "" {
		return Options{}, errors.New("the node is not known: give the pod NODE_NAME from the downward API (env valueFrom fieldRef spec.nodeName)")
	}
	return Options{API: "https://" + net.JoinHostPort(host, port), TokenFile: TokenFile, CAFile: CAFile, Node: node}, nil
}

// Pod is what the API server says of a pod.
type Pod struct {
	Namespace, Name string
	// Labels are those of Options.Keys the pod has.
	Labels gpu.PodLabels
}

// Pods is the pods of one node, listed from the API server and kept. It
// is safe for use by several goroutines.
type Pods struct {
	opts   Options
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
	ctx    context.Context // ends at Close: a list under way stops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	byUID   map[string]Pod
	started time.Time // when the last list started; zero before the first
	listing bool      // a list is under way
	failing bool      // the last list failed, and the log said so
}

// New returns the Pods of o; it lists nothing until asked for a pod. It
// fails when the CA file cannot be read.
func New(o Options) (*Pods, error) {
	if o.API == "" || o.Node == "" {
		return nil, errors.New("kube: the API server's URL and the node are needed")
	}
	if _, err := url.Parse(o.API); err != nil {
		return nil, fmt.Errorf("kube: the API server's URL: %w", err)
	}
	pool, err := readCA(o.CAFile)
	if err != nil {
		return nil, err
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	p := &Pods{opts: o, log: o.Logger, now: o.Now}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	transport.Proxy = nil // the API server is in the cluster, never behind a proxy
	p.client = &http.Client{Transport: transport, Timeout: o.Timeout}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// readCA reads the certificates the API server's is checked against.
func readCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kube: read the API server's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("kube: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Pod returns the namespace, name and labels of the pod of a UID
// ("0f1e2d3c-…", as the cgroup names it) from the last list; false when
// the list does not name it (not yet listed, already gone, or the API
// server out of reach). It never waits for the API server: when the list
// is older than the refresh, or misses the pod and is older than the
// retry, a list starts beside it and a later call has its answer.
func (p *Pods) Pod(uid string) (namespace, name string, labels gpu.PodLabels, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod, ok := p.byUID[strings.ToLower(uid)]
	if !p.listing && p.ctx.Err() == nil {
		age := p.now().Sub(p.started)
		if p.started.IsZero() || age >= p.opts.Refresh || (!ok && age >= p.opts.Retry) {
			p.listing, p.started = true, p.now()
			p.wg.Add(1)
			go p.list()
		}
	}
	return pod.Namespace, pod.Name, pod.Labels, ok
}

// Close stops a list under way and waits for it.
func (p *Pods) Close() {
	p.cancel()
	p.wg.Wait()
}

// Refresh lists the node's pods now and waits for the answer: for a
// look at the pods once, where Pod's lists beside it would come too late.
func (p *Pods) Refresh(ctx context.Context) error {
	p.mu.Lock()
	p.started = p.now()
	p.mu.Unlock()
	pods, err := p.fetch(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep(pods, err)
	return err
}

// list lists the node's pods and keeps them, beside the lookups.
func (p *Pods) list() {
	defer p.wg.Done()
	pods, err := p.fetch(p.ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listing = false
	if p.ctx.Err() == nil {
		p.keep(pods, err)
	}
}

// keep keeps a list; a failure keeps the last one (its pods are likelier
// still there than not), and is logged when the list before worked.
func (p *Pods) keep(pods map[string]Pod, err error) {
	if err != nil {
		if !p.failing {
			p.log.Warn("cannot list this node's pods from the Kubernetes API server: pods are named without their labels until it answers; "+
				"owners by pod label are not known meanwhile", "node", p.opts.Node, "err", err)
		}
		p.failing = true
		return
	}
	if p.failing {
		p.log.Info("the Kubernetes API server answers again: pods are named with their labels", "node", p.opts.Node, "pods", len(pods))
	}
	p.failing = false
	p.byUID = pods
}

// fetch asks the API server for the metadata of the node's pods.
func (p *Pods) fetch(ctx context.Context) (map[string]Pod, error) {
	token, err := readToken(p.opts.TokenFile)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("fieldSelector", "spec.nodeName="+p.opts.Node)
	// Version 0: the API server answers from its cache, not etcd's, as
	// a DaemonSet's lists should.
	q.Set("resourceVersion", "0")
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.opts.API, "/")+"/api/v1/pods?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	// The metadata alone, where the API server can (1.15 and later):
	// a pod's spec and status are most of its size.
	req.Header.Set("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "gpuwatch")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, scrub(err, token)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, scrub(refusal(resp), token)
	}
	return DecodePods(resp.Body, p.opts.Keys)
}

// readToken reads the service account's token.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the service account's token: %w (is automountServiceAccountToken false?)", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxToken))
	if err != nil {
		return "", fmt.Errorf("read the service account's token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("the service account's token file %s is empty", path)
	}
	return token, nil
}

// refusal is the error of an answer other than 200: the API server's
// Status message, and what to do about the usual ones.
func refusal(resp *http.Response) error {
	var status struct {
		Message string `json:"message"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatus))
	msg := resp.Status
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		msg += ": " + gpu.Clip(status.Message, 300)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return fmt.Errorf("the API server refused the service account's token: %s", msg)
	case http.StatusForbidden:
		return fmt.Errorf("the service account may not list pods: %s; bind it to a ClusterRole that may get and list pods (deploy/kubernetes/agent-rbac.yaml)", msg)
	}
	return fmt.Errorf("the API server answered %s", msg)
}

// scrub cuts the token out of an error, should anything quote it.
func scrub(err error, token string) error {
	if err == nil || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
}

// podList is the part of a list of pods (PodList, or
// PartialObjectMetadataList) gpuwatch reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			UID       string            `json:"uid"`
			Labels    map[string]string `json:"labels"`
			// A static pod's processes run under the UID of its
			// manifest, which its mirror pod names here.
			Annotations struct {
				Mirror string `json:"kubernetes.io/config.mirror"`
			} `json:"annotations"`
		} `json:"metadata"`
	} `json:"items"`
}

// DecodePods reads a list of pods (the API server's answer to GET
// /api/v1/pods) into the pods by UID, with the labels of keys (sorted,
// distinct). A pod with no UID, or a namespace or name that is not a DNS
// name, is left out; so are label values that are not label values, and
// the pods past MaxPods. An answer that is not a list of pods, or larger
// than 64 MiB, is an error.
func DecodePods(r io.Reader, keys []string) (map[string]Pod, error) {
	return decodePods(r, keys, maxList)
}

// decodePods is DecodePods of an answer of at most limit bytes.
func decodePods(r io.Reader, keys []string, limit int64) (map[string]Pod, error) {
	lr := &countingReader{r: io.LimitReader(r, limit+1)}
	var list podList
	if err := json.NewDecoder(lr).Decode(&list); err != nil {
		if lr.n > limit {
			return nil, fmt.Errorf("the list of pods is larger than the %d MiB gpuwatch reads", limit>>20)
		}
		return nil, fmt.Errorf("the list of pods is not JSON gpuwatch reads: %w", err)
	}
	out := make(map[string]Pod, min(len(list.Items), MaxPods))
	values := make([]string, len(keys))
	for _, it := range list.Items {
		m := &it.Metadata
		uid := strings.ToLower(m.UID)
		if uid == "" || len(uid) > 64 || !gpu.IsDNSSubdomain(m.Namespace) || !gpu.IsDNSSubdomain(m.Name) {
			continue
		}
		if len(out) == MaxPods {
			break
		}
		for i, k := range keys {
			values[i] = m.Labels[k]
		}
		pod := Pod{Namespace: m.Namespace, Name: m.Name, Labels: gpu.PodLabelsOf(keys, values)}
		out[uid] = pod
		if mirror := strings.ToLower(m.Annotations.Mirror); mirror != "" && mirror != uid && len(mirror) <= 64 {
			out[mirror] = pod
		}
	}
	return out, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
