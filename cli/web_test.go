package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/internal/browsertest"
	"github.com/gpuwatch/gpuwatch/internal/fleettest"
	"github.com/gpuwatch/gpuwatch/internal/testcert"
	"github.com/gpuwatch/gpuwatch/notifier/notifiertest"
)

// pageConfig is a daemon on the sim source's six GPUs (a leak, a batch
// spike, an idle holder, a fan failure…) at 60 times real time, with rules
// that fire within the first half minute or so: GPUHot when the fan fails
// 13 simulated minutes in. server is its server section.
func pageConfig(dir, server string) string {
	return fmt.Sprintf(`host: lab1
storage: {path: %s}
server: %s
source: {type: sim, interval: 5s, sim: {scenario: all, seed: 1, speed: 60}}
receivers: [{name: console, console: {}}]
route: {receiver: console, group_wait: 0s}
digests:
  - {name: daily, schedule: "0 9 * * *", receivers: [console]}
rules:
  - alert: GPUHot
    when: temperature > 85
    for: 1m
    severity: critical
    summary: "GPU {{.GPU}} at {{.Value}} C on {{.Host}}"
  - alert: GPUMemoryNearFull
    when: memory.used_percent > 95
    for: 1m
    severity: critical
  - alert: GPUIdleButHeld
    when: memory.used > 1GiB and avg(utilization.gpu, 10m) < 5
    for: 5m
    severity: warning
`, filepath.Join(dir, "state.db"), server)
}

// statusRecorder keeps every answer to GET /api/v1/status a tab got, by
// the time of its sample.
type statusRecorder struct {
	mu       sync.Mutex
	bySample map[string]daemon.StatusJSON
}

// recordStatus follows tab's network traffic until the test ends.
func recordStatus(t *testing.T, tab context.Context) *statusRecorder {
	r := &statusRecorder{bySample: map[string]daemon.StatusJSON{}}
	responses := chromedp.Events(tab, network.ResponseReceived)
	finished := chromedp.Events(tab, network.LoadingFinished)
	var urls sync.Map // request ID → URL path
	go func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			path := ev.Response.URL
			if i := strings.Index(path, "://"); i >= 0 {
				if j := strings.Index(path[i+3:], "/"); j >= 0 {
					path = path[i+3+j:]
				}
			}
			urls.Store(ev.RequestID, path)
		}
	}()
	go func() {
		for ev, err := range finished {
			if err != nil {
				return
			}
			// The two streams come on their own goroutines: the
			// response may be told a moment after its end.
			var v any
			ok := false
			for range 50 {
				if v, ok = urls.Load(ev.RequestID); ok {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !ok || v.(string) != "/api/v1/status" {
				continue
			}
			body, err := chromedp.Call(tab, network.GetResponseBody, network.GetResponseBodyParams{RequestID: ev.RequestID})
			if err != nil {
				continue
			}
			var st daemon.StatusJSON
			if json.Unmarshal([]byte(body.Body), &st) == nil && st.Time != nil {
				r.mu.Lock()
				r.bySample[st.Time.Format(time.RFC3339Nano)] = st
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// answer is the status answer the tab got for the sample of that time.
func (r *statusRecorder) answer(at string) (daemon.StatusJSON, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, st := range r.bySample {
		if t1, err := time.Parse(time.RFC3339Nano, k); err == nil {
			if t2, err := time.Parse(time.RFC3339Nano, at); err == nil && t1.Equal(t2) {
				return st, true
			}
		}
	}
	return daemon.StatusJSON{}, false
}

// pageCard is one GPU card as the page shows it.
type pageCard struct {
	Host        string `json:"host"`
	Index       int    `json:"index"`
	Use         string `json:"use"`
	Model       string `json:"model"`
	Memory      string `json:"memory"`
	Utilization string `json:"utilization"`
	Temperature string `json:"temperature"`
	Power       string `json:"power"`
	PIDs        []int  `json:"pids"`
}

// readCards reads the cards and the time of the sample they show, at once.
const readCards = `(() => ({
  time: document.getElementById('updated').dataset.time || '',
  cards: [...document.querySelectorAll('#hosts article.card')].map((c) => {
    const f = (n) => { const e = c.querySelector('[data-field="' + n + '"]'); return e ? e.textContent : ''; };
    return { host: c.dataset.host, index: +c.dataset.index, use: c.dataset.use, model: f('model'), memory: f('memory'),
      utilization: f('utilization'), temperature: f('temperature'), power: f('power'),
      pids: [...c.querySelectorAll('[data-pid]')].map((p) => +p.dataset.pid) };
  }),
}))()`

type pageCards struct {
	Time  string     `json:"time"`
	Cards []pageCard `json:"cards"`
}

// wantCard is the card the page should show for g, formatted as the page
// formats the API's numbers.
func wantCard(host string, g daemon.GPUJSON) pageCard {
	round := func(f float64) string { return fmt.Sprint(math.Round(f)) }
	c := pageCard{Host: host, Index: g.Index, Use: g.Use, Model: g.Name, Utilization: "–", Temperature: "–", Power: "–", PIDs: []int{}}
	if u := float64(g.UtilizationGPU); !math.IsNaN(u) {
		c.Utilization = round(u) + "%"
	}
	if v := float64(g.TemperatureC); !math.IsNaN(v) {
		c.Temperature = round(v) + " °C"
	}
	if p := float64(g.PowerW); !math.IsNaN(p) {
		c.Power = round(p) + " W"
		if l := float64(g.PowerLimitW); !math.IsNaN(l) && l != 0 {
			c.Power = round(p) + " / " + round(l) + " W"
		}
	}
	if g.MemoryTotalBytes != nil {
		gib := func(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
		pct := 100 * float64(*g.MemoryUsedBytes) / float64(*g.MemoryTotalBytes)
		c.Memory = gib(*g.MemoryUsedBytes) + " of " + gib(*g.MemoryTotalBytes) + " used (" + round(pct) + "%)"
	}
	if g.Use != "free" {
		for _, p := range g.Processes {
			c.PIDs = append(c.PIDs, p.PID)
		}
	}
	return c
}

// checkCardsShowTheAPI waits until the tab shows a sample whose status
// answer it recorded, then compares every card with that answer: the
// GPUs, their order (free first), and every value.
func checkCardsShowTheAPI(t *testing.T, tab context.Context, rec *statusRecorder, wantGPUs int) {
	t.Helper()
	var shown pageCards
	var answer daemon.StatusJSON
	fleettest.Eventually(t, 30*time.Second, "the cards of a sample the page got", func() (bool, string) {
		shown = browsertest.Eval[pageCards](t, tab, "read the cards", readCards)
		var ok bool
		answer, ok = rec.answer(shown.Time)
		return ok && len(shown.Cards) == wantGPUs, fmt.Sprintf("sample %q, %d cards", shown.Time, len(shown.Cards))
	})
	var want []pageCard
	for _, h := range answer.Hosts {
		free, rest := []pageCard{}, []pageCard{}
		for _, g := range h.GPUs {
			if c := wantCard(h.Host, g); g.Use == "free" {
				free = append(free, c)
			} else {
				rest = append(rest, c)
			}
		}
		want = append(append(want, free...), rest...)
	}
	if len(shown.Cards) != len(want) {
		t.Fatalf("the page shows %d cards, the API %d GPUs", len(shown.Cards), len(want))
	}
	for i := range want {
		got := shown.Cards[i]
		if got.Host != want[i].Host || got.Index != want[i].Index {
			t.Errorf("card %d: got %s GPU %d, want %s GPU %d (free GPUs first, then by index)", i, got.Host, got.Index, want[i].Host, want[i].Index)
			continue
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want[i])
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s GPU %d: the page shows\n%s\nthe API gave\n%s", got.Host, got.Index, gotJSON, wantJSON)
		}
	}
}

// apiGet GETs path from base and decodes the JSON answer into v.
func apiGet(t *testing.T, client *http.Client, base, path string, v any) {
	t.Helper()
	resp, err := client.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// waitPage waits until the JavaScript condition holds in tab.
func waitPage(t *testing.T, tab context.Context, timeout time.Duration, what, cond string) {
	t.Helper()
	fleettest.Eventually(t, timeout, what, func() (bool, string) {
		ok, err := browsertest.TryEval[bool](tab, "!!("+cond+")")
		if err != nil {
			return false, err.Error()
		}
		text, _ := browsertest.TryEval[string](tab, `location.pathname + ': ' + (document.body ? document.body.innerText.slice(0, 600) : '')`)
		return ok, "the page at " + text
	})
}

// TestPageInBrowser starts `gpuwatch run` on the sim source and drives
// the real headless Chromium through the page: the cards show the
// simulated GPUs with the values the API gave; an alert appears when the
// sim fires one; a silence made on the page is in GET /api/v1/silences,
// and expiring it there expires it; a history chart draws; the digest
// shows. It saves screenshots at desktop and phone widths, and measures
// the first load.
func TestPageInBrowser(t *testing.T) {
	browser := browsertest.Browser(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, pageConfig(dir, fmt.Sprintf("{listen: %q}", addr)))
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	base := "http://" + addr

	tab := browsertest.Tab(t, browser)
	rec := recordStatus(t, tab)
	browsertest.Do(t, tab, 30*time.Second, "open the page", browsertest.Viewport(1280, 900, false), chromedp.Navigate(base+"/"))
	waitPage(t, tab, 30*time.Second, "six GPU cards", `document.querySelectorAll('#hosts article.card').length === 6`)
	checkCardsShowTheAPI(t, tab, rec, 6)
	measureFirstLoad(t, tab)

	// The keyboard alone reaches the Alerts view: Tab to its link, Enter.
	for range 10 {
		if browsertest.Eval[string](t, tab, "read the focus", `document.activeElement.id`) == "tab-alerts" {
			break
		}
		browsertest.Do(t, tab, 10*time.Second, "press Tab", chromedp.KeyEvent(kb.Tab))
	}
	browsertest.Do(t, tab, 10*time.Second, "press Enter", chromedp.KeyEvent(kb.Enter))
	waitPage(t, tab, 10*time.Second, "the Alerts view from the keyboard", `!document.getElementById('view-alerts').hidden && document.activeElement.id === 'h-alerts'`)
	browsertest.Do(t, tab, 10*time.Second, "back to Now", chromedp.Navigate(base+"/#now"))

	// The fan of one GPU fails: GPUHot fires, and the page shows it.
	waitPage(t, tab, 90*time.Second, "GPUHot on the page", `document.querySelector('#alerts article[data-alert="GPUHot"]')`)
	var alerts []daemon.AlertJSON
	apiGet(t, http.DefaultClient, base, "/api/v1/alerts", &alerts)
	i := slices.IndexFunc(alerts, func(a daemon.AlertJSON) bool { return a.Alert == "GPUHot" })
	if i < 0 {
		t.Fatalf("the page shows GPUHot, the API does not: %+v", alerts)
	}
	hot := alerts[i]
	waitPage(t, tab, 10*time.Second, "the firing count in the Alerts tab", `!document.getElementById('alert-count').hidden`)
	waitPage(t, tab, 10*time.Second, "GPUHot's card marked", fmt.Sprintf(`document.querySelector('#gpu-lab1-%d .card-alerts')`, hot.GPU))
	browsertest.Screenshot(t, tab, "now-desktop", false)

	// A silence made on the page, as a user makes it: the alert's button,
	// a reason, submit.
	browsertest.Do(t, tab, 30*time.Second, "silence GPUHot from the page",
		chromedp.Navigate(base+"/#alerts"),
		chromedp.WaitVisible(chromedp.CSS(`#alerts article[data-alert="GPUHot"] button`)),
		chromedp.Click(chromedp.CSS(`#alerts article[data-alert="GPUHot"] button`)),
		chromedp.SendKeys(chromedp.ID("sil-comment"), "fan repair"),
		chromedp.SendKeys(chromedp.ID("sil-by"), "alice"),
		chromedp.Click(chromedp.CSS(`#silence-form button[type="submit"]`)),
	)
	waitPage(t, tab, 10*time.Second, "the page to say the silence was made", `document.getElementById('silence-result').textContent.startsWith('Silenced until')`)
	var silences []daemon.SilenceJSON
	apiGet(t, http.DefaultClient, base, "/api/v1/silences", &silences)
	wantMatchers := []string{`alert="GPUHot"`, `host="lab1"`, fmt.Sprintf(`gpu="%d"`, hot.GPU)}
	if len(silences) != 1 || !slices.Equal(silences[0].Matchers, wantMatchers) || silences[0].Comment != "fan repair" ||
		silences[0].CreatedBy != "alice" || silences[0].State != "active" || silences[0].EndsAt.Sub(silences[0].StartsAt) != 2*time.Hour {
		t.Fatalf("GET /api/v1/silences after silencing from the page: got %+v\nwant one active silence of 2h, %v, by alice, for fan repair", silences, wantMatchers)
	}
	waitPage(t, tab, 10*time.Second, "the silence listed on the page", fmt.Sprintf(`document.querySelector('[data-silence="%s"] button')`, silences[0].ID))
	// The alert it mutes says so, by whom and why, as the API does.
	waitPage(t, tab, 10*time.Second, "the alert marked silenced by alice", `[...document.querySelectorAll('#alerts [data-alert="GPUHot"]')].some((el) => el.textContent.includes('silenced by alice until') && el.textContent.includes('(fan repair)'))`)
	browsertest.Screenshot(t, tab, "alerts-desktop", false)
	browsertest.Do(t, tab, 10*time.Second, "expire the silence from the page",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`[data-silence="%s"] button`, silences[0].ID))))
	waitPage(t, tab, 10*time.Second, "the page to say the silence expired", `document.getElementById('silence-result').textContent.startsWith('Expired')`)
	apiGet(t, http.DefaultClient, base, "/api/v1/silences", &silences)
	if len(silences) != 1 || silences[0].State != "expired" {
		t.Errorf("GET /api/v1/silences after expiring from the page: got %+v, want it expired", silences)
	}

	// The history of the hot GPU draws: memory, utilization, temperature.
	browsertest.Do(t, tab, 30*time.Second, "open the history",
		chromedp.Navigate(fmt.Sprintf("%s/#history?host=lab1&gpu=%d", base, hot.GPU)))
	waitPage(t, tab, 30*time.Second, "three charts drawn", `[...document.querySelectorAll('#charts .chart')].filter((c) => +c.dataset.drawn > 1 && c.querySelector('canvas')).length === 3`)
	browsertest.Screenshot(t, tab, "history-desktop", false)

	// The digest, as a page.
	browsertest.Do(t, tab, 30*time.Second, "open the digest", chromedp.Navigate(base+"/#digest"))
	waitPage(t, tab, 30*time.Second, "the digest", `document.getElementById('digest').textContent.startsWith('GPU usage on lab1')`)

	// A phone in dark mode shows the same cards, one column, light on dark.
	phone := browsertest.Tab(t, browser)
	browsertest.Do(t, phone, 30*time.Second, "open the page on a phone", browsertest.Viewport(390, 844, true), browsertest.DarkMode(),
		chromedp.Navigate(base+"/"))
	waitPage(t, phone, 30*time.Second, "six cards on the phone", `document.querySelectorAll('#hosts article.card').length === 6`)
	if overflow := browsertest.Eval[bool](t, phone, "measure", `document.documentElement.scrollWidth > window.innerWidth`); overflow {
		t.Errorf("on a phone the page is wider than the screen")
	}
	if bg := browsertest.Eval[string](t, phone, "read the colours", `getComputedStyle(document.body).backgroundColor`); bg != "rgb(13, 17, 23)" {
		t.Errorf("in dark mode the page's background is %s, want the dark one", bg)
	}
	// Every control has a name a screen reader says, and the keyboard
	// reaches the views.
	if unnamed := browsertest.Eval[[]string](t, phone, "look for unnamed controls", `[...document.querySelectorAll('a, button, input, select')]
	  .filter((e) => !e.closest('[hidden]') && !(e.getAttribute('aria-label') || e.labels && e.labels.length || e.textContent.trim()))
	  .map((e) => e.outerHTML.slice(0, 80))`); len(unnamed) > 0 {
		t.Errorf("controls without a name for screen readers: %v", unnamed)
	}
	browsertest.Screenshot(t, phone, "now-phone", true)
}

// firstLoad is what the browser's resource timing says of the first
// load: bytes on the wire (compressed, with headers) of the page's files
// and of its first API answers, and when the first contentful paint came.
type firstLoad struct {
	Files float64 `json:"files"`
	API   float64 `json:"api"`
	Paint float64 `json:"paint"`
	Count int     `json:"count"`
}

// measureFirstLoad logs what the first load transferred and when the
// first paint came, and checks the budget: at most 150 KB.
func measureFirstLoad(t *testing.T, tab context.Context) {
	t.Helper()
	got := browsertest.Eval[firstLoad](t, tab, "read the resource timing", `(() => {
  const out = {files: 0, api: 0, count: 0, paint: -1};
  for (const e of performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))) {
    const path = new URL(e.name).pathname;
    if (path.startsWith('/api/') || path.startsWith('/web/')) out.api += e.transferSize; else { out.files += e.transferSize; out.count++; }
  }
  const fcp = performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint');
  if (fcp) out.paint = fcp.startTime;
  return out;
})()`)
	t.Logf("first load: %d files, %.1f KB on the wire (gzipped, with headers), and %.1f KB of API answers; first contentful paint at %.0f ms",
		got.Count, got.Files/1000, got.API/1000, got.Paint)
	if got.Files > 150_000 || got.Count < 5 {
		t.Errorf("the first load transferred %.0f bytes in %d files, want at most 150 KB (and the page, its script, styles and chart library)", got.Files, got.Count)
	}
	if got.Paint <= 0 {
		t.Errorf("no first contentful paint recorded")
	}
}

// TestPageInBrowserAsksForCredentials: with authentication on (TLS, a
// user's password), the page asks for credentials, refuses wrong ones, and
// shows the GPUs to the right ones.
func TestPageInBrowserAsksForCredentials(t *testing.T) {
	browser := browsertest.Browser(t, chromedp.IgnoreCertErrors)
	dir := t.TempDir()
	certFile, keyFile := testcert.Write(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, pageConfig(dir, fmt.Sprintf("{listen: %q, tls: {cert_file: %s, key_file: %s}, basic_auth_users: {alice: %q}}", addr, certFile, keyFile, hash)))
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	base := "https://" + addr

	tab := browsertest.Tab(t, browser)
	// A link to the alerts, followed before a login: the form, then the
	// alerts.
	browsertest.Do(t, tab, 30*time.Second, "open the page's alerts", chromedp.Navigate(base+"/#alerts"))
	waitPage(t, tab, 10*time.Second, "the login form", `location.pathname === '/login' && document.getElementById('password')`)
	if n := browsertest.Eval[int](t, tab, "count cards", `document.querySelectorAll('article.card').length`); n != 0 {
		t.Errorf("before a login the page shows %d GPU cards", n)
	}
	browsertest.Screenshot(t, tab, "login", false)
	browsertest.Do(t, tab, 30*time.Second, "log in with a wrong password",
		chromedp.SendKeys(chromedp.ID("user"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), "wrong horse"),
		chromedp.Submit(chromedp.ID("password")))
	waitPage(t, tab, 10*time.Second, "the refusal", `document.getElementById('login-error') && location.pathname === '/login'`)
	if msg := browsertest.Eval[string](t, tab, "read the error", `document.getElementById('login-error').textContent`); !strings.Contains(msg, "Wrong user or password") {
		t.Errorf("the login form after a wrong password says %q", msg)
	}
	if user := browsertest.Eval[string](t, tab, "read the user", `document.getElementById('user').value`); user != "alice" {
		t.Errorf("the login form after a wrong password has user %q, want alice kept", user)
	}
	browsertest.Do(t, tab, 30*time.Second, "log in with the right password",
		chromedp.SendKeys(chromedp.ID("password"), "correct horse"),
		chromedp.Submit(chromedp.ID("password")))
	waitPage(t, tab, 30*time.Second, "the alerts asked for, after the login", `location.pathname === '/' && location.hash === '#alerts' && !document.getElementById('view-alerts').hidden`)
	browsertest.Screenshot(t, tab, "alerts-after-login", false)
	browsertest.Do(t, tab, 30*time.Second, "go to the GPUs", chromedp.Navigate(base+"/#now"))
	waitPage(t, tab, 30*time.Second, "the GPUs after the login", `location.pathname === '/' && document.querySelectorAll('#hosts article.card').length === 6`)
	if who := browsertest.Eval[string](t, tab, "read the user", `document.getElementById('user').textContent`); who != "(alice)" {
		t.Errorf("the page after the login names the user %q, want (alice)", who)
	}
	cookies, err := chromedp.Run(tab, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
		return res.Cookies, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		if !c.Secure || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
			t.Errorf("cookie %s: Secure %v, HttpOnly %v, SameSite %q; want Secure, HttpOnly, Strict", c.Name, c.Secure, c.HTTPOnly, c.SameSite)
		}
	}
	// Logging out ends the session: the page asks again.
	browsertest.Do(t, tab, 30*time.Second, "log out", chromedp.Click(chromedp.ID("logout")))
	waitPage(t, tab, 10*time.Second, "the login form after logging out", `location.pathname === '/login'`)
}

// TestPageInBrowserOnFleetHub runs the page on the hub of a fleet, as the
// fleet end-to-end test builds it: three gpuwatch agents on simulated
// GPUs (node-a's fan fails, node-b fills a GPU's memory, node-c trains),
// the real Prometheus scraping them, the hub on the prometheus source
// pushing to the real Alertmanager. The page groups the GPUs by host,
// filters them, shows the API's values and the hub's alerts, and draws a
// host's GPU's history.
func TestPageInBrowserOnFleetHub(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet's page runs the real Prometheus and Chromium for about a minute")
	}
	browser := browsertest.Browser(t)
	dir := t.TempDir()
	prom, agents := fleetAgents(t, dir, []string{"node-a", "node-b", "node-c"}, []string{"thermal", "batch-spike", "normal-training"})
	for _, a := range agents {
		defer a.stop()
	}
	am := fleettest.Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	hook := notifiertest.NewServer(t, func(int, *notifiertest.Request) notifiertest.Response { return notifiertest.Response{Status: 200} })
	hubPath, hubAddr := filepath.Join(dir, "hub.yaml"), freeAddr(t)
	writeFile(t, hubPath, fleetHub(dir, "hub", prom.URL, hook.URL, am.URL, hubAddr))
	hub := runInProcess(t, hubPath)
	defer hub.stop()
	waitFor(t, &hub.stderr, "HTTP API listening")
	base := "http://" + hubAddr

	tab := browsertest.Tab(t, browser)
	rec := recordStatus(t, tab)
	browsertest.Do(t, tab, 30*time.Second, "open the hub's page", browsertest.Viewport(1280, 900, false), chromedp.Navigate(base+"/"))
	waitPage(t, tab, 30*time.Second, "the three hosts, two GPUs each",
		`[...document.querySelectorAll('#hosts .host-group')].map((g) => g.dataset.host + ':' + g.querySelectorAll('article.card').length).join(',') === 'node-a:2,node-b:2,node-c:2'`)
	checkCardsShowTheAPI(t, tab, rec, 6)
	if title := browsertest.Eval[string](t, tab, "read the host", `document.getElementById('host').textContent`); title != "hub (fleet)" {
		t.Errorf("the hub's page names itself %q, want hub (fleet)", title)
	}

	// Filtering by host leaves that host's GPUs.
	browsertest.Do(t, tab, 10*time.Second, "filter by host", chromedp.SendKeys(chromedp.ID("filter"), "node-b"))
	waitPage(t, tab, 10*time.Second, "node-b alone",
		`[...document.querySelectorAll('#hosts .host-group')].map((g) => g.dataset.host).join(',') === 'node-b'`)
	browsertest.Do(t, tab, 10*time.Second, "clear the filter",
		chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))

	waitPage(t, tab, 60*time.Second, "GPUHot on node-a on the page", `document.querySelector('#alerts article[data-alert="GPUHot"]') && document.querySelector('#gpu-node-a-0 .card-alerts')`)
	browsertest.Screenshot(t, tab, "hub-desktop", false)

	// node-a's GPU 0's history draws: two minutes at least.
	browsertest.Do(t, tab, 30*time.Second, "open node-a's history", chromedp.Navigate(base+"/#history?host=node-a&gpu=0"))
	fleettest.Eventually(t, 90*time.Second, "node-a GPU 0's charts with two points or more", func() (bool, string) {
		browsertest.Do(t, tab, 10*time.Second, "redraw", chromedp.Evaluate[chromedp.Void](`window.dispatchEvent(new Event('resize'))`))
		time.Sleep(time.Second)
		n, err := browsertest.TryEval[int](tab, `[...document.querySelectorAll('#charts .chart')].filter((c) => +c.dataset.drawn > 1 && c.querySelector('canvas')).length`)
		return err == nil && n == 3, fmt.Sprintf("%d charts drawn (%v)", n, err)
	})
	browsertest.Screenshot(t, tab, "hub-history-desktop", false)
}

// The hub's source reads any window of the fleet's past, which the page's
// charts ask of it on a hub (daemon.readFleetHistory).
var _ interface {
	Range(ctx context.Context, from, to time.Time, step time.Duration, each func(*gpu.Snapshot)) error
} = (*prometheus.Source)(nil)

// TestPageInBrowserFirstMinute opens the page of a daemon just started on
// simulated GPUs in real time, as a newcomer does: until the first answer
// the page says it is loading the GPUs; a GPU's history spans the window
// asked for, though gpuwatch has read the GPU for seconds; on a phone
// 390 pixels wide the charts fit; a card's readings keep apart.
func TestPageInBrowserFirstMinute(t *testing.T) {
	browser := browsertest.Browser(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, strings.Replace(pageConfig(dir, fmt.Sprintf("{listen: %q}", addr)), "speed: 60", "speed: 1", 1))
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	base := "http://" + addr

	// The first answer about the GPUs is held back: the page says it is
	// loading them, not a blank "GPUs now".
	tab := browsertest.Tab(t, browser)
	paused := make(chan fetch.RequestID, 4)
	go func() {
		for ev, err := range chromedp.Events(tab, fetch.RequestPaused) {
			if err != nil {
				return
			}
			paused <- ev.RequestID
		}
	}()
	browsertest.Do(t, tab, 30*time.Second, "hold the answers about the GPUs",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/api/v1/status*"}}})
			return err
		}),
		browsertest.Viewport(1280, 900, false), chromedp.Navigate(base+"/"))
	var held fetch.RequestID
	select {
	case held = <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the page did not ask for the GPUs within 30s")
	}
	waitPage(t, tab, 10*time.Second, "the loading state", `document.getElementById('hosts').getAttribute('aria-busy') === 'true' && document.getElementById('hosts').innerText.includes('Loading the GPUs')`)
	browsertest.Screenshot(t, tab, "loading-desktop", true)
	browsertest.Do(t, tab, 30*time.Second, "let the answers through",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, fetch.Disable, cdp.Empty{})
			return err
		}))
	waitPage(t, tab, 30*time.Second, "six GPU cards", `document.querySelectorAll('#hosts article.card').length === 6 && !document.getElementById('hosts').hasAttribute('aria-busy')`)

	// A card's readings (utilization, temperature, power) keep apart: no
	// label or value runs into its neighbour's.
	if touching := browsertest.Eval[[]string](t, tab, "measure the readings", readingsTouching); len(touching) > 0 {
		t.Errorf("readings that run together on the desktop cards: %v", touching)
	}
	browsertest.Screenshot(t, tab, "now-first-minute", false)

	// The history of a GPU read for seconds spans the window asked for.
	for _, w := range []struct {
		window string
		span   float64
	}{{"6h", 6 * 3600}, {"1h", 3600}} {
		browsertest.Do(t, tab, 30*time.Second, "open the history",
			chromedp.Navigate(base+"/#history?host=lab1&gpu=0"),
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const s = document.getElementById('hist-window'); s.value = %q; s.dispatchEvent(new Event('change', {bubbles: true})); })()`, w.window)))
		waitPage(t, tab, 30*time.Second, "three charts of the "+w.window+" window", fmt.Sprintf(`[...document.querySelectorAll('#charts .chart')].filter((c) => +c.dataset.drawn >= 1 && Math.abs((+c.dataset.to - +c.dataset.from) - %g) < 1).length === 3`, w.span))
	}
	if note := browsertest.Eval[string](t, tab, "read the note", `(document.getElementById('history-note') || {}).textContent || ''`); !strings.HasPrefix(note, "Readings since ") {
		t.Errorf("the history of a GPU read for seconds says %q, want since when gpuwatch reads it", note)
	}
	browsertest.Screenshot(t, tab, "history-first-minute", false)
	// The window made narrow: the charts follow.
	browsertest.Do(t, tab, 30*time.Second, "narrow the window", browsertest.Viewport(390, 844, false))
	waitPage(t, tab, 10*time.Second, "the charts narrowed", `[...document.querySelectorAll('#charts canvas')].every((c) => c.getBoundingClientRect().right <= document.documentElement.clientWidth)`)

	// A phone, and a plain window, 390 pixels wide: the charts fit.
	for _, phone := range []bool{true, false} {
		narrow := browsertest.Tab(t, browser)
		browsertest.Do(t, narrow, 30*time.Second, "open the history 390 pixels wide", browsertest.Viewport(390, 844, phone),
			chromedp.Navigate(base+"/#history?host=lab1&gpu=0"))
		waitPage(t, narrow, 30*time.Second, "three charts drawn", `[...document.querySelectorAll('#charts .chart')].filter((c) => +c.dataset.drawn >= 1 && c.querySelector('canvas')).length === 3`)
		// The window's width less its scroll bar, if it shows one.
		over := browsertest.Eval[[]string](t, narrow, "measure", `(() => { const w = document.documentElement.clientWidth;
		  return [...document.querySelectorAll('#charts .chart, #charts canvas, #history-form, .u-legend')]
		  .filter((e) => e.getBoundingClientRect().right > w + 0.5)
		  .map((e) => (e.className || e.tagName) + ' to ' + Math.round(e.getBoundingClientRect().right) + ' of ' + w)
		  .concat(document.documentElement.scrollWidth > w ? ['the page, ' + document.documentElement.scrollWidth + ' wide of ' + w] : []); })()`)
		if len(over) > 0 {
			t.Errorf("390 pixels wide (phone %v): wider than the window: %v", phone, over)
		}
		name := "history-390-window"
		if phone {
			name = "history-phone"
		}
		browsertest.Screenshot(t, narrow, name, false)
	}
}

// readingsTouching lists the readings of the cards whose label or value
// comes within 8 pixels of the next one's, side by side.
const readingsTouching = `(() => {
  const out = [];
  for (const card of document.querySelectorAll('#hosts article.card')) {
    const cells = [...card.querySelectorAll('.readings > div')];
    for (let i = 0; i + 1 < cells.length; i++) {
      for (const sel of ['dt', 'dd']) {
        const a = cells[i].querySelector(sel), b = cells[i + 1].querySelector(sel);
        const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
        const range = document.createRange();
        range.selectNodeContents(a);
        const textRight = range.getBoundingClientRect().right;
        if (Math.abs(ra.top - rb.top) < 4 && rb.left - textRight < 8) out.push(card.id + ': ' + a.textContent + ' | ' + b.textContent);
      }
    }
  }
  return out;
})()`

// TestPageShowsHealth runs `gpuwatch run` on the ecc-row-remap scenario:
// when GPU 0's uncorrectable ECC error leaves a row remap pending, its
// card says "needs reset" and why, the other's "ok", and the summary
// counts it. It saves a screenshot.
func TestPageShowsHealth(t *testing.T) {
	browser := browsertest.Browser(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	path := filepath.Join(dir, "gpuwatch.yaml")
	writeFile(t, path, strings.Replace(pageConfig(dir, fmt.Sprintf("{listen: %q}", addr)),
		"scenario: all, seed: 1, speed: 60", "scenario: ecc-row-remap, seed: 1, speed: 600", 1))
	d := runInProcess(t, path)
	defer d.stop()
	waitFor(t, &d.stderr, "HTTP API listening")
	tab := browsertest.Tab(t, browser)
	browsertest.Do(t, tab, 30*time.Second, "open the page", browsertest.Viewport(1280, 700, false), chromedp.Navigate("http://"+addr+"/"))
	waitPage(t, tab, 60*time.Second, "GPU 0 needing a reset",
		`(document.querySelector('#gpu-lab1-0 [data-field="health"]') || {}).textContent === 'needs reset'`)
	if reason := browsertest.Eval[string](t, tab, "read the reason", `document.querySelector('#gpu-lab1-0 [data-field="health-reason"]').textContent`); !strings.Contains(reason, "a row remap is pending") {
		t.Errorf("GPU 0's card says %q, want the pending row remap", reason)
	}
	if ok := browsertest.Eval[string](t, tab, "read GPU 1's health", `document.querySelector('#gpu-lab1-1 [data-field="health"]').textContent`); ok != "ok" {
		t.Errorf("GPU 1's card says %q, want ok", ok)
	}
	if summary := browsertest.Eval[string](t, tab, "read the summary", `document.getElementById('summary').textContent`); !strings.Contains(summary, "health: 1 needs reset") {
		t.Errorf("the summary says %q, want it to count the GPU that needs a reset", summary)
	}
	browsertest.Screenshot(t, tab, "health-desktop", false)
}
