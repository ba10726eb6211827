package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const kubernetesAgent = `source:
  type: nvml
  kubernetes: {node: "${NODE_NAME}", refresh: 30s}
people:
  pod_labels:
    owner: {alice: U0ALICE}
  pod_label_email: "{example.org/team}@example.org"
`

// TestKubernetesOptions: an agent in a pod lists its node's pods, from
// the API server of its environment, for the pod label keys people:
// maps by.
func TestKubernetesOptions(t *testing.T) {
	c, err := Parse("agent.yaml", []byte(kubernetesAgent), lookupFrom(map[string]string{"NODE_NAME": "gpu-node-1"}))
	if err != nil {
		t.Fatal(err)
	}
	cluster := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	o, ok, err := c.KubernetesOptions(func(k string) string { return cluster[k] })
	if err != nil || !ok {
		t.Fatalf("KubernetesOptions: ok %v, error %v; want the options", ok, err)
	}
	if o.API != "https://10.96.0.1:443" || o.Node != "gpu-node-1" || o.Refresh != 30*time.Second ||
		!slices.Equal(o.Keys, []string{"example.org/team", "owner"}) {
		t.Errorf("KubernetesOptions: API %q, node %q, refresh %v, keys %q; want https://10.96.0.1:443, gpu-node-1, 30s, [example.org/team owner]",
			o.API, o.Node, o.Refresh, o.Keys)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("Warnings: %q, want none", w)
	}

	// Outside a cluster the agent says so, and what to do.
	if _, _, err := c.KubernetesOptions(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "KUBERNETES_SERVICE_HOST") {
		t.Errorf("KubernetesOptions outside a cluster: error %v, want one naming KUBERNETES_SERVICE_HOST", err)
	}

	// Without a node nothing is listed, and people: mapping by pod
	// label is warned of.
	c, err = Parse("agent.yaml", []byte(strings.Replace(kubernetesAgent, `  kubernetes: {node: "${NODE_NAME}", refresh: 30s}`+"\n", "", 1)), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.KubernetesOptions(func(string) string { return "" }); ok || err != nil {
		t.Errorf("KubernetesOptions without a node: ok %v, error %v; want neither", ok, err)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "set source.kubernetes.node: ${NODE_NAME}") {
		t.Errorf("Warnings without a node: %q, want one saying to set source.kubernetes.node", w)
	}
}
