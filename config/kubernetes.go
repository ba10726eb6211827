package config

import (
	"fmt"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/kube"
)

// KubernetesSource says where an agent in a pod reads its node's pods:
// the Kubernetes API server, with the pod's service account.
type KubernetesSource struct {
	// Node is the node the agent runs on, whose pods it lists: the
	// downward API's spec.nodeName, "${NODE_NAME}". Empty: pods are
	// named from the kubelet's pod log folder alone, without labels.
	Node string `yaml:"node"`
	// Refresh is how old the list of pods may grow; zero:
	// kube.DefaultRefresh.
	Refresh time.Duration `yaml:"refresh"`
}

// MinKubernetesRefresh is the shortest source.kubernetes.refresh: a
// DaemonSet on every node lists its pods, and the API server serves them
// all.
const MinKubernetesRefresh = 10 * time.Second

// checkKubernetes reports what is wrong with source.kubernetes and
// metrics.pod_labels.
func (c *Config) checkKubernetes(root *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	k := &c.Source.Kubernetes
	at := func(key string) *yaml.Node { return nodePath(root, "source", "kubernetes", key) }
	switch {
	case k.Node == "" && k.Refresh != 0:
		fail(at("node"), "source.kubernetes.node is empty: give the node the agent runs on, ${NODE_NAME} "+
			"with NODE_NAME from the downward API (env valueFrom fieldRef spec.nodeName)")
	case k.Node == "":
	case c.Source.Type != "nvml":
		fail(at("node"), "source.kubernetes lists the pods of an agent's node for the processes NVML reads: it needs source.type nvml, not %s; "+
			"a hub reads pod labels from its series, dcgm-exporter's or the agents' (metrics.pod_labels; docs/people.md)", c.Source.Type)
	case !gpu.IsDNSSubdomain(k.Node):
		fail(at("node"), "source.kubernetes.node %s is not a node name: lower-case letters, digits, '-' and '.'", gpu.Clip(k.Node, 80))
	}
	if k.Refresh != 0 && k.Refresh < MinKubernetesRefresh {
		fail(at("refresh"), "source.kubernetes.refresh %v is too short: every node's agent lists its pods that often; use %v or more (default %v)",
			k.Refresh, MinKubernetesRefresh, kube.DefaultRefresh)
	}
	c.checkPodLabels(root, fail)
}

// PodLabelKeys are the Kubernetes pod label keys gpuwatch reads of each
// pod, sorted: those the people: section maps owners by and those the
// per-process series carry (metrics.pod_labels).
func (c *Config) PodLabelKeys() []string {
	keys := c.People.PodLabelKeys()
	for _, k := range c.Metrics.PodLabels {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// checkPodLabels reports what is wrong with metrics.pod_labels, and the
// pod label keys of it and people: that a series cannot tell apart
// (people: checks its own keys).
func (c *Config) checkPodLabels(root *yaml.Node, fail func(*yaml.Node, string, ...any)) {
	for i, k := range c.Metrics.PodLabels {
		switch at := nodeAt(nodePath(root, "metrics"), "pod_labels", i); {
		case !gpu.IsPodLabelKey(k):
			fail(at, "metrics.pod_labels[%d]: %s is not a Kubernetes label key: a name of letters, digits, '-', '_' and '.' (at most 63), "+
				"with an optional DNS prefix and '/', like owner or example.org/owner", i, gpu.Clip(k, 80))
		case slices.Contains(c.Metrics.PodLabels[:i], k):
			fail(at, "metrics.pod_labels[%d]: %q is listed twice", i, k)
		}
	}
	keys := c.PodLabelKeys()
	if len(keys) > gpu.MaxPodLabels && len(c.Metrics.PodLabels) > 0 {
		fail(nodePath(root, "metrics", "pod_labels"), "metrics.pod_labels and people: name %d pod label keys in all, more than the %d gpuwatch reads of a pod",
			len(keys), gpu.MaxPodLabels)
		return
	}
	bySeries := map[string]string{}
	for _, key := range keys {
		if !gpu.IsPodLabelKey(key) {
			continue // said above, or by people:
		}
		name := gpu.PodLabelSeriesName(key)
		if other, ok := bySeries[name]; ok {
			at := walk(root, "people", "pod_labels", key)
			if slices.Contains(c.Metrics.PodLabels, key) {
				at = nodeAt(nodePath(root, "metrics"), "pod_labels", slices.Index(c.Metrics.PodLabels, key))
			}
			fail(at, "pod labels %q and %q are both %s in a series (dcgm-exporter's, or label_%s in gpuwatch's), "+
				"where a label name has letters, digits and '_' alone: a hub cannot tell them apart; read one of them", other, key, name, name)
			continue
		}
		bySeries[name] = key
	}
}

// KubernetesOptions are the options of the API server client of an
// agent in a pod (kube.InCluster, getenv as os.Getenv): its node, the
// pod label keys people: and metrics.pod_labels read, the refresh. ok is false when the
// config names no node.
func (c *Config) KubernetesOptions(getenv func(string) string) (o kube.Options, ok bool, err error) {
	k := &c.Source.Kubernetes
	if k.Node == "" {
		return kube.Options{}, false, nil
	}
	o, err = kube.InCluster(getenv, k.Node)
	if err != nil {
		return kube.Options{}, true, fmt.Errorf("source.kubernetes: %w", err)
	}
	o.Keys, o.Refresh = c.PodLabelKeys(), k.Refresh
	return o, true, nil
}
