package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/gpuwatch/gpuwatch/notifier/slack"
)

// Warnings are what in a valid config works but should change, one
// sentence each; `gpuwatch check` prints them.
func (c *Config) Warnings() []string {
	var out []string
	for _, u := range c.Slack.Admins {
		u = strings.TrimPrefix(strings.TrimSpace(u), "@")
		if !slack.IsUserID(u) {
			out = append(out, fmt.Sprintf("%s: slack.admins lists %q, a user name: it still works, but Slack has deprecated user names "+
				"and users can change theirs; list the user ID instead (Slack profile → ⋯ → Copy member ID)", c.File, u))
		}
	}
	if p := &c.Source.Prometheus; c.Source.Type == "prometheus" && strings.HasPrefix(p.URL, "http://") &&
		(p.BearerToken != "" || p.BearerTokenFile != "" || p.BasicAuth != nil) && !loopbackURL(p.URL) {
		out = append(out, fmt.Sprintf("%s: source.prometheus.url is plain http:// to another machine, and the credentials would cross the network "+
			"in clear; use https:// (with tls.ca_file for a private CA)", c.File))
	}
	if c.tellsOwners() && !c.People.Mapped() {
		out = append(out, fmt.Sprintf("%s: a route tells owners (owners:), but the people: section maps no one: every alert goes to the channel alone; "+
			"map Unix users, namespaces, pod labels or Slurm accounts to Slack users (docs/people.md)", c.File))
	}
	if c.Source.Type == "nvml" && c.Source.Kubernetes.Node == "" && len(c.PodLabelKeys()) > 0 {
		out = append(out, fmt.Sprintf("%s: people: or metrics.pod_labels name pod labels, which an agent reads from the Kubernetes API server: "+
			"set source.kubernetes.node: ${NODE_NAME} (docs/people.md); until then no process has pod labels", c.File))
	}
	if len(c.Metrics.PodLabels) > 0 && !c.Metrics.PerProcess {
		out = append(out, fmt.Sprintf("%s: metrics.pod_labels puts pod labels on the per-process series, which only metrics.per_process: true serves: "+
			"without it no series carries them", c.File))
	}
	for _, r := range c.Rules {
		for _, w := range r.Warnings {
			out = append(out, w.Error())
		}
	}
	return out
}

// loopbackURL reports whether a URL's host is this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && IsLoopback(net.JoinHostPort(u.Hostname(), "0"))
}
