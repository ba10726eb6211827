package deploy

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// podLogs is where gpu/proc reads pod names (proc.DefaultPodLogs).
const podLogs = "/var/log/pods"

// cluster is what `kubectl apply -k deploy/kubernetes` would apply, each
// object decoded strictly into its Kubernetes type: a misspelt or
// misplaced field fails the decoding.
type cluster struct {
	namespaces      []corev1.Namespace
	configMaps      map[string]corev1.ConfigMap
	secrets         map[string]corev1.Secret
	services        []corev1.Service
	claims          []corev1.PersistentVolumeClaim
	daemonSets      []appsv1.DaemonSet
	deployments     []appsv1.Deployment
	serviceMonitors []monitoringv1.ServiceMonitor
	roles           []rbacv1.Role
	roleBindings    []rbacv1.RoleBinding
	serviceAccounts []corev1.ServiceAccount
	clusterRoles    []rbacv1.ClusterRole
	clusterBindings []rbacv1.ClusterRoleBinding
}

// installed runs deploy/kubernetes/install on a copy of the folder, with a
// kubectl that records what it is asked, and renders the kustomization it
// applies with kustomize's own library, as kubectl apply -k does.
func installed(t *testing.T) (dir string, c cluster) {
	t.Helper()
	need(t, "openssl", "apt-get install openssl")
	dir = filepath.Join(t.TempDir(), "kubernetes")
	copyTree(t, "kubernetes", dir)
	for _, f := range []string{"api-token", "tls.crt", "tls.key", "slack.env"} {
		os.Remove(filepath.Join(dir, "secrets", f)) // a checkout's own, if it installed
	}
	bin := t.TempDir()
	kubectl := "#!/bin/sh\necho \"$@\" >\"" + filepath.Join(bin, "kubectl.args") + "\"\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")

	got := run(t, dir, []string{path, "SLACK_BOT_TOKEN=", "SLACK_SIGNING_SECRET="}, "./install")
	if got.code != 1 || !strings.Contains(got.stderr, "set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET") {
		t.Errorf("install without the Slack tokens: exit %d %q, want 1 saying to set them", got.code, got.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "secrets", "api-token")); err == nil {
		t.Errorf("install without the Slack tokens made secrets; want it to stop first")
	}
	got = run(t, dir, []string{path, "SLACK_BOT_TOKEN=xoxb-test-token", "SLACK_SIGNING_SECRET=test-signing-secret"}, "./install", "--context", "gpu-cluster")
	if got.code != 0 {
		t.Fatalf("install: exit %d\n%s", got.code, got.stderr)
	}
	args, err := os.ReadFile(filepath.Join(bin, "kubectl.args"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "apply -k " + dir + " --context gpu-cluster\n"; string(args) != want {
		t.Errorf("install ran kubectl %q, want %q", args, want)
	}
	return dir, render(t, dir)
}

func render(t *testing.T, dir string) cluster {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	c := cluster{configMaps: map[string]corev1.ConfigMap{}, secrets: map[string]corev1.Secret{}}
	for _, r := range resources.Resources() {
		text, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		kind := r.GetApiVersion() + " " + r.GetKind()
		// Decoded as the API server decodes: field names are
		// case-sensitive (encoding/json's are not), unknown ones errors.
		decode := func(into any) {
			j, err := yaml.YAMLToJSON(text)
			if err == nil {
				var strict []error
				strict, err = kjson.UnmarshalStrict(j, into, kjson.DisallowUnknownFields)
				err = errors.Join(append(strict, err)...)
			}
			if err != nil {
				t.Errorf("%s %s: %v", kind, r.GetName(), err)
			}
		}
		switch kind {
		case "v1 Namespace":
			var o corev1.Namespace
			decode(&o)
			c.namespaces = append(c.namespaces, o)
		case "v1 ConfigMap":
			var o corev1.ConfigMap
			decode(&o)
			c.configMaps[o.Name] = o
		case "v1 Secret":
			var o corev1.Secret
			decode(&o)
			c.secrets[o.Name] = o
		case "v1 Service":
			var o corev1.Service
			decode(&o)
			c.services = append(c.services, o)
		case "v1 PersistentVolumeClaim":
			var o corev1.PersistentVolumeClaim
			decode(&o)
			c.claims = append(c.claims, o)
		case "apps/v1 DaemonSet":
			var o appsv1.DaemonSet
			decode(&o)
			c.daemonSets = append(c.daemonSets, o)
		case "apps/v1 Deployment":
			var o appsv1.Deployment
			decode(&o)
			c.deployments = append(c.deployments, o)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			var o monitoringv1.ServiceMonitor
			decode(&o)
			c.serviceMonitors = append(c.serviceMonitors, o)
		case "rbac.authorization.k8s.io/v1 Role":
			var o rbacv1.Role
			decode(&o)
			c.roles = append(c.roles, o)
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			var o rbacv1.RoleBinding
			decode(&o)
			c.roleBindings = append(c.roleBindings, o)
		case "v1 ServiceAccount":
			var o corev1.ServiceAccount
			decode(&o)
			c.serviceAccounts = append(c.serviceAccounts, o)
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			var o rbacv1.ClusterRole
			decode(&o)
			c.clusterRoles = append(c.clusterRoles, o)
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			decode(&o)
			c.clusterBindings = append(c.clusterBindings, o)
		default:
			t.Errorf("%s %s: a kind this test does not check", kind, r.GetName())
		}
		clusterScoped := r.GetKind() == "Namespace" || r.GetKind() == "ClusterRole" || r.GetKind() == "ClusterRoleBinding"
		if ns := r.GetNamespace(); !clusterScoped && ns != "gpuwatch" {
			t.Errorf("%s %s is in namespace %q, want gpuwatch", kind, r.GetName(), ns)
		}
	}
	return c
}

// TestKubernetesManifests checks that the objects fit together: selectors
// select the pods, ports and volumes name what exists, secrets and config
// maps hold the keys mounted, and the agents watch what the README says.
func TestKubernetesManifests(t *testing.T) {
	dir, c := installed(t)
	if len(c.namespaces) != 1 || c.namespaces[0].Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("want the namespace gpuwatch, at the privileged pod security level the agents need (hostPID, hostPath)")
	}
	if len(c.daemonSets) != 1 || len(c.deployments) != 1 {
		t.Fatalf("got %d DaemonSets and %d Deployments, want the agents' and the hub's", len(c.daemonSets), len(c.deployments))
	}
	agent, hub := c.daemonSets[0], c.deployments[0]
	pods := map[string]corev1.PodTemplateSpec{agent.Name: agent.Spec.Template, hub.Name: hub.Spec.Template}
	for name, sel := range map[string]*metav1.LabelSelector{agent.Name: agent.Spec.Selector, hub.Name: hub.Spec.Selector} {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || !s.Matches(labels.Set(pods[name].Labels)) {
			t.Errorf("%s: its selector %v does not select its pods (%v)", name, sel, pods[name].Labels)
		}
	}
	for name, pod := range pods {
		c.checkPod(t, name, pod.Spec)
	}

	a := agent.Spec.Template.Spec
	if !a.HostPID {
		t.Errorf("%s: hostPID is off: NVML's PIDs are the node's", agent.Name)
	}
	if a.NodeSelector["nvidia.com/gpu.present"] != "true" {
		t.Errorf("%s: nodeSelector %v, want the GPU nodes", agent.Name, a.NodeSelector)
	}
	if !slices.ContainsFunc(a.Tolerations, func(tl corev1.Toleration) bool { return tl.Key == "nvidia.com/gpu" }) {
		t.Errorf("%s: no toleration of nvidia.com/gpu taints", agent.Name)
	}
	if a.RuntimeClassName == nil || *a.RuntimeClassName != "nvidia" {
		t.Errorf("%s: runtimeClassName %v, want nvidia", agent.Name, a.RuntimeClassName)
	}
	mounted := map[string]corev1.VolumeMount{}
	for _, m := range a.Containers[0].VolumeMounts {
		mounted[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range a.Volumes {
		volumes[v.Name] = v
	}
	for _, host := range []string{podLogs, "/etc/passwd"} {
		m, ok := mounted[host]
		v := volumes[m.Name]
		if !ok || !m.ReadOnly || v.HostPath == nil || v.HostPath.Path != host {
			t.Errorf("%s: want the node's %s mounted read-only at %s", agent.Name, host, host)
		}
	}
	for _, ct := range append(a.Containers, hub.Spec.Template.Spec.Containers...) {
		if ct.Image != "ghcr.io/gpuwatch/gpuwatch:latest" {
			t.Errorf("container %s: image %q, want the kustomization's", ct.Name, ct.Image)
		}
	}
	if hub.Spec.Replicas == nil || *hub.Spec.Replicas != 1 || hub.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("%s: want one replica, replaced by Recreate: two hubs would announce every alert twice", hub.Name)
	}

	// Services select pods and name their ports; ServiceMonitors select
	// services and send the secret's token and certificate.
	for _, svc := range c.services {
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var pod *corev1.PodTemplateSpec
		for name := range pods {
			if p := pods[name]; sel.Matches(labels.Set(p.Labels)) {
				pod = &p
			}
		}
		if pod == nil {
			t.Errorf("service %s selects no pod", svc.Name)
			continue
		}
		for _, p := range svc.Spec.Ports {
			if !slices.ContainsFunc(pod.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.String() }) {
				t.Errorf("service %s: targetPort %s is no port of its pods", svc.Name, p.TargetPort.String())
			}
		}
	}
	if len(c.serviceMonitors) != 2 {
		t.Errorf("got %d ServiceMonitors, want the agents' and the hub's", len(c.serviceMonitors))
	}
	for _, sm := range c.serviceMonitors {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var svc *corev1.Service
		for i := range c.services {
			if sel.Matches(labels.Set(c.services[i].Labels)) {
				svc = &c.services[i]
			}
		}
		if svc == nil {
			t.Errorf("ServiceMonitor %s selects no service", sm.Name)
			continue
		}
		for _, ep := range sm.Spec.Endpoints {
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
				t.Errorf("ServiceMonitor %s: port %q is not a port of service %s", sm.Name, ep.Port, svc.Name)
			}
			if ep.Scheme == nil || strings.ToLower(string(*ep.Scheme)) != "https" || ep.TLSConfig == nil || ep.Authorization == nil || ep.Authorization.Credentials == nil {
				t.Errorf("ServiceMonitor %s: want https with the CA and the bearer token: gpuwatch asks for them off loopback", sm.Name)
				continue
			}
			c.checkSecretKey(t, "ServiceMonitor "+sm.Name, ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key)
			c.checkSecretKey(t, "ServiceMonitor "+sm.Name, ep.TLSConfig.CA.Secret.Name, ep.TLSConfig.CA.Secret.Key)
			cert := c.certificate(t)
			if name := ep.TLSConfig.ServerName; name == nil {
				t.Errorf("ServiceMonitor %s: no serverName to check the certificate against", sm.Name)
			} else if err := cert.VerifyHostname(*name); err != nil {
				t.Errorf("ServiceMonitor %s: serverName %s: %v", sm.Name, *name, err)
			}
		}
	}
	if token := string(c.secrets["gpuwatch-api"].Data["api-token"]); !regexp.MustCompile(`^[0-9a-f]{64}\n?$`).MatchString(token) {
		t.Errorf("install's API token %q, want 32 random bytes in hex", token)
	}
	for _, f := range []string{"api-token", "tls.key", "slack.env"} {
		if fi, err := os.Stat(filepath.Join(dir, "secrets", f)); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("install's secrets/%s: %v, want it readable by its owner only", f, fi.Mode())
		}
	}
}

// checkPod checks that a pod's volumes and environment name config maps,
// secrets and keys that exist, and that it runs gpuwatch on a config it
// mounts.
func (c cluster) checkPod(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
		switch {
		case v.ConfigMap != nil:
			if _, ok := c.configMaps[v.ConfigMap.Name]; !ok {
				t.Errorf("%s: volume %s: no config map %s", name, v.Name, v.ConfigMap.Name)
			}
		case v.Secret != nil:
			if _, ok := c.secrets[v.Secret.SecretName]; !ok {
				t.Errorf("%s: volume %s: no secret %s", name, v.Name, v.Secret.SecretName)
			}
		}
	}
	ct := spec.Containers[0]
	if !reflect.DeepEqual(ct.Args, []string{"run", "--config", "/etc/gpuwatch/config.yaml"}) {
		t.Errorf("%s: args %v, want run --config /etc/gpuwatch/config.yaml", name, ct.Args)
	}
	for _, m := range ct.VolumeMounts {
		v, ok := volumes[m.Name]
		switch {
		case !ok:
			t.Errorf("%s: mount %s: no volume %s", name, m.MountPath, m.Name)
		case m.SubPath != "" && v.ConfigMap != nil:
			if _, ok := c.configMaps[v.ConfigMap.Name].Data[m.SubPath]; !ok {
				t.Errorf("%s: mount %s: config map %s has no %s", name, m.MountPath, v.ConfigMap.Name, m.SubPath)
			}
		}
	}
	for _, e := range ct.EnvFrom {
		if e.SecretRef != nil {
			if _, ok := c.secrets[e.SecretRef.Name]; !ok {
				t.Errorf("%s: envFrom: no secret %s", name, e.SecretRef.Name)
			}
		}
	}
	if sc := ct.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: want no privilege escalation and a read-only root file system", name)
	}
}

func (c cluster) checkSecretKey(t *testing.T, what, secret, key string) {
	t.Helper()
	if _, ok := c.secrets[secret].Data[key]; !ok {
		t.Errorf("%s: secret %s has no key %s", what, secret, key)
	}
}

func (c cluster) certificate(t *testing.T) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(c.secrets["gpuwatch-api"].Data["tls.crt"])
	if block == nil {
		t.Fatal("secret gpuwatch-api: tls.crt holds no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestKubernetesConfigs checks the agents' and the hub's configs as
// gpuwatch itself does, with the secrets install made where the pods mount
// them.
func TestKubernetesConfigs(t *testing.T) {
	_, c := installed(t)
	bin := gpuwatch(t)
	api := t.TempDir()
	for key, value := range c.secrets["gpuwatch-api"].Data {
		if err := os.WriteFile(filepath.Join(api, key), value, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"NODE_NAME=gpu-node-1", "PROMETHEUS_URL=http://127.0.0.1:9090"}
	for k, v := range c.secrets["gpuwatch-slack"].Data {
		env = append(env, k+"="+string(v))
	}
	for _, tc := range []struct{ configMap, want string }{
		{"gpuwatch-agent-config", "ok: 0 rules, 1 receiver, source nvml every 5s"},
		{"gpuwatch-hub-config", "ok: 18 rules, 1 receiver, source prometheus every 30s"},
	} {
		t.Run(tc.configMap, func(t *testing.T) {
			dir := t.TempDir()
			for key, text := range c.configMaps[tc.configMap].Data {
				text = strings.ReplaceAll(text, "/etc/gpuwatch/api/", api+"/")
				if err := os.WriteFile(filepath.Join(dir, key), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := run(t, dir, env, bin, "check", "--config", "config.yaml")
			if strings.Contains(got.stderr, "source.type prometheus is not available yet") {
				t.Skipf("this gpuwatch has no prometheus source yet (issue 11): %s", got.stderr)
			}
			if got.code != 0 || strings.TrimSpace(got.stdout) != "config.yaml: "+tc.want {
				t.Errorf("gpuwatch check: exit %d\n%s%s\nwant config.yaml: %s", got.code, got.stdout, got.stderr, tc.want)
			}
		})
	}
}

// TestHubRulesAreTheExampleRules keeps the hub's rules those of
// config.example.yaml, which README and tests describe.
func TestHubRulesAreTheExampleRules(t *testing.T) {
	rulesOf := func(path string) any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Rules any }
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Rules
	}
	if example, hub := rulesOf(filepath.Join(repo, "config.example.yaml")), rulesOf("kubernetes/hub-rules.yaml"); !reflect.DeepEqual(example, hub) {
		t.Errorf("kubernetes/hub-rules.yaml differs from the rules of config.example.yaml: copy them again")
	}
}

// TestKubernetesPrometheusDiscovery: kube-prometheus's Prometheus (service
// account prometheus-k8s in monitoring) may list and watch the services,
// endpoints and pods of gpuwatch's namespace, which its ServiceMonitors
// discover targets from.
func TestKubernetesPrometheusDiscovery(t *testing.T) {
	_, c := installed(t)
	if len(c.roles) != 1 || len(c.roleBindings) != 1 {
		t.Fatalf("%d roles and %d role bindings, want one of each", len(c.roles), len(c.roleBindings))
	}
	role, binding := c.roles[0], c.roleBindings[0]
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		for _, res := range rule.Resources {
			if slices.Contains(rule.Verbs, "list") && slices.Contains(rule.Verbs, "watch") && slices.Contains(rule.Verbs, "get") {
				granted[res] = true
			}
		}
	}
	for _, res := range []string{"services", "endpoints", "pods", "endpointslices"} {
		if !granted[res] {
			t.Errorf("role %s does not let Prometheus get, list and watch %s", role.Name, res)
		}
	}
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Kind != "ServiceAccount" || binding.Subjects[0].Name != "prometheus-k8s" || binding.Subjects[0].Namespace != "monitoring" {
		t.Errorf("role binding %+v, want role %s bound to kube-prometheus's service account monitoring/prometheus-k8s", binding, role.Name)
	}
}

// TestKubernetesAgentListsItsPods: the agents run as a service account
// that may get and list pods and nothing else, with its token mounted,
// and know their node from the downward API, which their config names
// as source.kubernetes.node.
func TestKubernetesAgentListsItsPods(t *testing.T) {
	_, c := installed(t)
	if len(c.serviceAccounts) != 1 || len(c.clusterRoles) != 1 || len(c.clusterBindings) != 1 {
		t.Fatalf("%d service accounts, %d cluster roles and %d bindings, want the agents' one of each",
			len(c.serviceAccounts), len(c.clusterRoles), len(c.clusterBindings))
	}
	sa, role, binding := c.serviceAccounts[0], c.clusterRoles[0], c.clusterBindings[0]
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].APIGroups, []string{""}) || !slices.Equal(role.Rules[0].Resources, []string{"pods"}) ||
		!slices.Equal(role.Rules[0].Verbs, []string{"get", "list"}) {
		t.Errorf("cluster role %s grants %+v, want get and list of pods alone", role.Name, role.Rules)
	}
	if binding.RoleRef.Kind != "ClusterRole" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Kind != "ServiceAccount" || binding.Subjects[0].Name != sa.Name || binding.Subjects[0].Namespace != "gpuwatch" {
		t.Errorf("cluster role binding %+v, want %s bound to gpuwatch/%s", binding, role.Name, sa.Name)
	}
	agent := c.daemonSets[0].Spec.Template.Spec
	if agent.ServiceAccountName != sa.Name || agent.AutomountServiceAccountToken == nil || !*agent.AutomountServiceAccountToken {
		t.Errorf("the agents run as %q with token mounted %v, want %s with its token", agent.ServiceAccountName, agent.AutomountServiceAccountToken, sa.Name)
	}
	node := slices.IndexFunc(agent.Containers[0].Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if node < 0 {
		t.Errorf("the agents' env %+v has no NODE_NAME from spec.nodeName", agent.Containers[0].Env)
	}
	if cfg := c.configMaps["gpuwatch-agent-config"].Data["config.yaml"]; !strings.Contains(cfg, `kubernetes: {node: "${NODE_NAME}"}`) {
		t.Errorf("the agents' config does not list the node's pods: want source.kubernetes.node ${NODE_NAME}:\n%s", cfg)
	}
}

// TestKubernetesReleaseLabel: the release-label component, turned on in
// the kustomization as its comment says, labels every ServiceMonitor
// release: kube-prometheus-stack, which that chart's Prometheus selects;
// off, none has it.
func TestKubernetesReleaseLabel(t *testing.T) {
	dir, c := installed(t)
	for _, sm := range c.serviceMonitors {
		if _, ok := sm.Labels["release"]; ok {
			t.Errorf("ServiceMonitor %s has a release label with the component off", sm.Name)
		}
	}
	k := filepath.Join(dir, "kustomization.yaml")
	text, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	on := strings.Replace(string(text), "# components:\n#   - release-label\n", "components:\n  - release-label\n", 1)
	if on == string(text) {
		t.Fatal("kustomization.yaml has no commented components: [release-label] to turn on")
	}
	if err := os.WriteFile(k, []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	c = render(t, dir)
	if len(c.serviceMonitors) == 0 {
		t.Fatal("no ServiceMonitor")
	}
	for _, sm := range c.serviceMonitors {
		if sm.Labels["release"] != "kube-prometheus-stack" || sm.Labels["app.kubernetes.io/name"] != "gpuwatch" {
			t.Errorf("ServiceMonitor %s: labels %v, want release: kube-prometheus-stack besides its own", sm.Name, sm.Labels)
		}
	}
}
