package cli_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/internal/browsertest"
)

// TestPageNamesSlurmJobs: on a Slurm node (the slurm-node scenario) the
// page names each process by its job and user, "job 4242 (alice)", as
// the API gives them.
func TestPageNamesSlurmJobs(t *testing.T) {
	browser := browsertest.Browser(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, fmt.Sprintf(`host: slurm1
storage: {path: %s}
server: {listen: %q}
source: {type: sim, interval: 5s, sim: {scenario: slurm-node, seed: 1, speed: 60}}
receivers: [{name: console, console: {}}]
route: {receiver: console}
`, filepath.Join(dir, "state.db"), addr))
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	base := "http://" + addr

	tab := browsertest.Tab(t, browser)
	browsertest.Do(t, tab, 30*time.Second, "open the page", browsertest.Viewport(1280, 900, false), chromedp.Navigate(base+"/"))
	waitPage(t, tab, 30*time.Second, "four GPU cards", `document.querySelectorAll('#hosts article.card').length === 4`)
	var status daemon.StatusJSON
	apiGet(t, http.DefaultClient, base, "/api/v1/status", &status)
	var jobs []string
	for _, g := range status.GPUs {
		for _, p := range g.Processes {
			id, ok := strings.CutPrefix(p.Job, "slurm:")
			if !ok || p.User == "" {
				t.Fatalf("GPU %d: process %+v, want a Slurm job and its user", g.Index, p)
			}
			jobs = append(jobs, "job "+id+" ("+p.User+")")
		}
	}
	for _, job := range jobs {
		waitPage(t, tab, 10*time.Second, job+" on the page", fmt.Sprintf(`document.getElementById('hosts').textContent.includes(%q)`, job))
	}
	browsertest.Screenshot(t, tab, "slurm-node-desktop", false)
}
