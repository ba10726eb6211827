package config

import (
	"fmt"
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

// checkKubernetes reports what is wrong with source.kubernetes, and the
// pod label keys people: maps by that a hub cannot tell apart in
// dcgm-exporter's series.
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
			"a hub reads pod labels from dcgm-exporter's series (docs/people.md)", c.Source.Type)
	case !gpu.IsDNSSubdomain(k.Node):
		fail(at("node"), "source.kubernetes.node %s is not a node name: lower-case letters, digits, '-' and '.'", gpu.Clip(k.Node, 80))
	}
	if k.Refresh != 0 && k.Refresh < MinKubernetesRefresh {
		fail(at("refresh"), "source.kubernetes.refresh %v is too short: every node's agent lists its pods that often; use %v or more (default %v)",
			k.Refresh, MinKubernetesRefresh, kube.DefaultRefresh)
	}
	bySeries := map[string]string{}
	for _, key := range c.People.PodLabelKeys() {
		if !gpu.IsPodLabelKey(key) {
			continue // people: says so
		}
		name := gpu.PodLabelSeriesName(key)
		if other, ok := bySeries[name]; ok {
			fail(walk(root, "people", "pod_labels", key), "people: pod labels %q and %q are both %s in dcgm-exporter's series, "+
				"where a label name has letters, digits and '_' alone: a hub cannot tell them apart; map one of them", other, key, name)
			continue
		}
		bySeries[name] = key
	}
}

// KubernetesOptions are the options of the API server client of an
// agent in a pod (kube.InCluster, getenv as os.Getenv): its node, the
// pod label keys people: maps by, the refresh. ok is false when the
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
	o.Keys, o.Refresh = c.People.PodLabelKeys(), k.Refresh
	return o, true, nil
}
