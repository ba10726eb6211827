package config

import (
	"strings"
	"testing"
)

// TestParseRefusesShortRepeatIntervals: a repeat_interval under a minute,
// of a route (the root or a child) or of a rule, would announce a firing
// alert again at almost every sample: check refuses it where it is
// written; 0 (never repeat) and a minute pass.
func TestParseRefusesShortRepeatIntervals(t *testing.T) {
	text := `receivers:
  - name: console
    console: {}
route:
  receiver: console
  repeat_interval: 1ns
  routes:
    - matchers: ['severity="critical"']
      repeat_interval: 59s
    - matchers: ['severity="info"']
      repeat_interval: 0s
    - matchers: ['severity="warning"']
      repeat_interval: 1m
rules:
  - alert: GPUHot
    when: temperature > 85
    repeat_interval: 30s
  - alert: GPUWarm
    when: temperature > 80
    repeat_interval: 1m
`
	_, err := Parse("gpuwatch.yaml", []byte(text), noEnv)
	if err == nil {
		t.Fatal("Parse: no error, want the three short repeat_intervals refused")
	}
	want := []string{
		"gpuwatch.yaml:6:20: route.repeat_interval: 1ns is shorter than 1m0s: a firing alert would be announced again at almost every sample; give 1m0s or more (4h is the default), or 0 to never repeat",
		"gpuwatch.yaml:9:24: route.routes[0].repeat_interval: 59s is shorter than 1m0s",
		"gpuwatch.yaml:17:22: repeat_interval 30s is shorter than 1m0s: the alert would be announced again at almost every sample; give 1m0s or more, or leave it out for the route's",
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("Parse: got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: got\n%s\nwant it to start with\n%s", i, lines[i], w)
		}
	}
}

// TestParseRefusesLongNames: the names of receivers and digests, and the
// host's, go into the store's keys: past their limits they are refused
// where they are written.
func TestParseRefusesLongNames(t *testing.T) {
	long := strings.Repeat("x", MaxNameBytes+1)
	text := `host: ` + strings.Repeat("h", 1025) + `
receivers:
  - name: ` + long + `
    console: {}
route:
  receiver: ` + long + `
digests:
  - name: ` + long + `
    schedule: "0 9 * * *"
    receivers: [` + long + `]
`
	_, err := Parse("gpuwatch.yaml", []byte(text), noEnv)
	if err == nil {
		t.Fatal("Parse: no error, want the long names refused")
	}
	for _, w := range []string{
		"gpuwatch.yaml:1:7: host is 1025 bytes, the most is 1024",
		"gpuwatch.yaml:3:11: receiver name is 129 bytes, the most is 128",
		"gpuwatch.yaml:8:11: digest name is 129 bytes, the most is 128",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Parse: got\n%v\nwant a line with %q", err, w)
		}
	}
}

// TestParseRefusesLongRetention: storage.retention is the longest window
// a digest may ask for; past 400d it is refused.
func TestParseRefusesLongRetention(t *testing.T) {
	if _, err := Parse("gpuwatch.yaml", []byte("storage: {retention: 400d}\n"), noEnv); err != nil {
		t.Errorf("retention 400d: %v", err)
	}
	_, err := Parse("gpuwatch.yaml", []byte("storage: {retention: 401d}\n"), noEnv)
	if want := "gpuwatch.yaml:1:22: storage.retention 9624h0m0s is longer than 400d"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("retention 401d: got %v, want %s…", err, want)
	}
}

// TestParseTrustedProxiesAndAllowedHosts: server.trusted_proxies takes
// addresses and networks, server.allowed_hosts host names; anything else
// is refused where it is written.
func TestParseTrustedProxiesAndAllowedHosts(t *testing.T) {
	good := "server:\n  trusted_proxies: [127.0.0.1, 10.0.0.0/8, \"::1\", 2001:db8::/32]\n  allowed_hosts: [gpuwatch.example.org]\n  external_url: https://gpu.example.org:8443\n"
	c, err := Parse("gpuwatch.yaml", []byte(good), noEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if p, err := c.Server.Proxies(); err != nil || len(p) != 4 || p[0].String() != "127.0.0.1/32" || p[1].String() != "10.0.0.0/8" {
		t.Errorf("Proxies: %v %v", p, err)
	}
	if got := strings.Join(c.Server.AllowedHostNames(), " "); got != "gpu.example.org gpuwatch.example.org" {
		t.Errorf("AllowedHostNames: %q, want the external URL's host and the allowed host", got)
	}
	bad := "server:\n  trusted_proxies: [10.0.0.0/33, proxy.example.org]\n  allowed_hosts: [\"https://gpu.example.org\"]\n"
	_, err = Parse("gpuwatch.yaml", []byte(bad), noEnv)
	for _, want := range []string{
		`gpuwatch.yaml:2:21: server.trusted_proxies: "10.0.0.0/33" is not an address or a network: write it like 203.0.113.7 or 10.0.0.0/8`,
		`gpuwatch.yaml:2:34: server.trusted_proxies: "proxy.example.org" is not an address or a network`,
		`gpuwatch.yaml:3:19: server.allowed_hosts: "https://gpu.example.org" is not a host name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse: got %v, want %q", err, want)
		}
	}
}
