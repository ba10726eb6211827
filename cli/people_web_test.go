package cli_test

import (
	"fmt"
	"net/http"
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
	base := serveSim(t, "slurm1", "slurm-node", 60, "route: {receiver: console}\n")

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
