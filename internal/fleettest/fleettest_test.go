package fleettest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPrometheusAndAlertmanagerStart: both start, answer their APIs, and
// Prometheus scrapes itself.
func TestPrometheusAndAlertmanagerStart(t *testing.T) {
	am := Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	prom := Prometheus(t, "global: {scrape_interval: 1s}\nscrape_configs: []\n")
	for _, u := range []string{am.URL + "/api/v2/status", prom.URL + "/api/v1/status/buildinfo"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "version") {
			t.Errorf("GET %s: HTTP %d %s", u, resp.StatusCode, body)
		}
	}
}
