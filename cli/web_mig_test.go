package cli_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/internal/browsertest"
)

// TestPageInBrowserShowsMIGInstances runs gpuwatch on an A100 split into
// seven 1g.10gb MIG slices, one leaking, and checks in the real Chromium
// that the page shows one card for the GPU, with the card's readings and
// its seven instances inside it, each with its own memory, its
// utilization "not measured" (an A100 measures none per slice), its
// process and its history; the leaking slice's alert is on its instance.
func TestPageInBrowserShowsMIGInstances(t *testing.T) {
	browser := browsertest.Browser(t)
	base := serveSim(t, "lab1", "mig-slice-leak", 600, `route: {receiver: console, group_wait: 0s}
rules:
  - alert: SliceFillingUp
    when: memory.used_percent > 60
    for: 1m
    severity: warning
    summary: "{{.Label}} memory at {{.Value | percent}}"
`)

	tab := browsertest.Tab(t, browser)
	browsertest.Do(t, tab, 30*time.Second, "open the page", browsertest.Viewport(1280, 1000, false), chromedp.Navigate(base+"/"))
	waitPage(t, tab, 30*time.Second, "the A100's card with its seven instances",
		`document.querySelectorAll('#hosts article.card').length === 1 && document.querySelectorAll('#hosts article.card section.instance').length === 7`)
	waitPage(t, tab, 120*time.Second, "a slice's alert on its instance", `document.querySelector('#hosts section.instance .card-alerts')`)
	type instance struct {
		Title, Utilization, Memory, History string
		PIDs                                int
	}
	got := browsertest.Eval[[]instance](t, tab, "read the instances", `[...document.querySelectorAll('#hosts section.instance')].map((el) => ({
		Title: el.querySelector('h4').textContent,
		Utilization: el.querySelector('[data-field="utilization"]').textContent,
		Memory: el.querySelector('[data-field="memory"]').textContent,
		History: el.querySelector('.card-actions a').getAttribute('href'),
		PIDs: el.querySelectorAll('.holders li').length,
	}))`)
	for i, in := range got {
		if want := fmt.Sprintf("MIG %d (1g.10gb)", 7+i); in.Title != want || in.Utilization != "not measured" ||
			!strings.Contains(in.Memory, " of 9.5 GiB used (") ||
			!strings.Contains(in.History, "&uuid=MIG-") || in.PIDs == 0 {
			t.Errorf("instance %d: got %+v, want %s, not measured, its memory of 9.5 GiB, its processes and its history", i, in, want)
		}
	}
	card := browsertest.Eval[string](t, tab, "read the GPU's card", `document.querySelector('#hosts article.card').innerText`)
	for _, want := range []string{"GPU 0", "NVIDIA A100-SXM4-80GB · 7 MIG instances", "Temperature", "Power", "SliceFillingUp firing"} {
		if want == "GPU 0" {
			summary := browsertest.Eval[string](t, tab, "read the summary", `document.getElementById('summary').textContent`)
			if !strings.HasPrefix(summary, "1 GPU (7 MIG instances): ") {
				t.Errorf("summary %q, want it to count the GPU and its instances", summary)
			}
		}
		if !strings.Contains(card, want) {
			t.Errorf("the GPU's card lacks %q:\n%s", want, card)
		}
	}
	browsertest.Screenshot(t, tab, "mig-desktop", false)

	// An instance's history: its own memory, from its history link.
	browsertest.Do(t, tab, 30*time.Second, "open a slice's history", chromedp.Navigate(base+"/"+got[0].History))
	waitPage(t, tab, 30*time.Second, "the slice's charts drawn", `document.querySelectorAll('#charts .chart[data-drawn]').length === 3`)
	if sel := browsertest.Eval[string](t, tab, "read the chosen GPU", `document.getElementById('hist-gpu').selectedOptions[0].textContent`); sel != "GPU 0 · MIG 7 (1g.10gb)" {
		t.Errorf("history of %q, want GPU 0 · MIG 7 (1g.10gb)", sel)
	}
	notes := browsertest.Eval[[]string](t, tab, "read what the charts say is not measured",
		`[...document.querySelectorAll('#charts .chart')].filter((c) => c.querySelector('[data-field=not-measured]')).map((c) => c.dataset.series)`)
	if !slices.Equal(notes, []string{"utilization_percent", "temperature_c"}) {
		t.Errorf("charts saying what a slice does not measure: %v, want its utilization (an A100) and temperature (the card's)", notes)
	}
	browsertest.Screenshot(t, tab, "mig-history-desktop", false)
}

// serveSim runs gpuwatch, its page and API on a free port, on a
// simulated scenario at speed, with a console receiver and the rest of
// the config (a route, rules); it returns the page's address. The test
// stops it.
func serveSim(t *testing.T, host, scenario string, speed int, rest string) string {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, fmt.Sprintf(`host: %s
storage: {path: %s}
server: {listen: %q}
source: {type: sim, interval: 5s, sim: {scenario: %s, seed: 1, speed: %d}}
receivers: [{name: console, console: {}}]
`, host, filepath.Join(dir, "state.db"), addr, scenario, speed)+rest)
	d := runInProcess(t, path)
	t.Cleanup(func() { d.stop() })
	waitFor(t, &d.stderr, "HTTP API listening")
	return "http://" + addr
}
