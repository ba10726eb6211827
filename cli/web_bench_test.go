package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/internal/browsertest"
	"github.com/gpuwatch/gpuwatch/web"
)

// BenchmarkStatusAPIWith50PagesOpen measures what the page costs the
// daemon: the built binary runs on the sim source in real time (a sample a
// second, six GPUs) and 50 pages stay open on it, each making the page's
// requests: its files once, its session, then GET /api/v1/status every
// second, as the page's script does. (Fifty tabs of the real Chromium do
// not fit a 2-core machine; BenchmarkStatusAPIWithChromiumPages opens real
// ones, fewer.) One op is one GET /api/v1/status from another client,
// 50 ms apart. It reports that request's latency at the 50th and 99th
// percentile with the pages open and, measured the same way before they
// opened, without them; and the daemon's resident memory (VmRSS) without
// and with them.
//
//	go test ./cli -run '^$' -bench BenchmarkStatusAPIWith50PagesOpen -benchtime 400x
func BenchmarkStatusAPIWith50PagesOpen(b *testing.B) {
	measurePages(b, func(base string) {
		ctx, cancel := context.WithCancel(b.Context())
		b.Cleanup(cancel)
		for range 50 {
			go pollLikeThePage(ctx, base)
		}
	})
}

// BenchmarkStatusAPIWithChromiumPages is BenchmarkStatusAPIWith50PagesOpen
// with tabs of the real headless Chromium (GPUWATCH_BROWSER_TESTS=1), as
// many as GPUWATCH_PAGES says (default 10).
//
//	GPUWATCH_BROWSER_TESTS=1 GPUWATCH_PAGES=10 go test ./cli -run '^$' -bench BenchmarkStatusAPIWithChromiumPages -benchtime 400x
func BenchmarkStatusAPIWithChromiumPages(b *testing.B) {
	browser := browsertest.Browser(b, chromedp.Flag("renderer-process-limit", "8"))
	pages := 10
	if n, err := strconv.Atoi(os.Getenv("GPUWATCH_PAGES")); err == nil && n > 0 {
		pages = n
	}
	measurePages(b, func(base string) {
		for range pages {
			tab := browsertest.Tab(b, browser)
			browsertest.Do(b, tab, time.Minute, "open a page", chromedp.Navigate(base+"/"))
		}
	})
	b.ReportMetric(float64(pages), "pages")
}

// pollLikeThePage makes a page's requests until ctx ends: its files, its
// session, then the GPUs every second.
func pollLikeThePage(ctx context.Context, base string) {
	get := func(path string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set(web.PageHeader, "1")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	for _, path := range []string{"/", "/assets/app.css", "/assets/app.js", "/assets/vendor/uplot/uPlot.iife.min.js", "/assets/vendor/uplot/uPlot.min.css", "/web/session"} {
		get(path)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		get("/api/v1/status")
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// measurePages runs the daemon on the sim source in real time, measures
// the API's latency and the daemon's memory, has open open the pages, and
// measures them again as the benchmark.
func measurePages(b *testing.B, open func(base string)) {
	dir := b.TempDir()
	bin := buildGpuwatch(b, dir)
	addr := freeAddr(b)
	cfg := strings.Replace(pageConfig(dir, fmt.Sprintf("{listen: %q}", addr)), "interval: 5s, sim: {scenario: all, seed: 1, speed: 60}",
		"interval: 1s, sim: {scenario: all, seed: 1, speed: 1}", 1)
	path := filepath.Join(dir, "gpuwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd, stderr := startBuilt(b, bin, path)
	status := "http://" + addr + "/api/v1/status"
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(get(status), `"gpus": [`) {
		if time.Now().After(deadline) {
			b.Fatalf("gpuwatch run answered nothing within a minute:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	memory := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	time.Sleep(5 * time.Second)
	idle := statusLatencies(b, status, 200)
	idleMem, _ := processMemory(memory)

	open("http://" + addr)
	time.Sleep(10 * time.Second) // every page has loaded and refreshed a few times
	b.ResetTimer()
	busy := statusLatencies(b, status, b.N)
	b.StopTimer()
	busyMem, ok := processMemory(memory)
	if !ok {
		b.Fatalf("gpuwatch run exited during the benchmark:\n%s", stderr.String())
	}
	b.ReportMetric(percentile(busy, 0.50), "p50-ms")
	b.ReportMetric(percentile(busy, 0.99), "p99-ms")
	b.ReportMetric(percentile(idle, 0.99), "p99-ms-no-pages")
	b.ReportMetric(idleMem.RSS, "RSS-MiB-no-pages")
	b.ReportMetric(busyMem.RSS, "RSS-MiB")
	b.ReportMetric(busyMem.HWM, "peak-RSS-MiB")
}

// statusLatencies GETs url n times, 50 ms apart, and returns each answer's
// time in milliseconds.
func statusLatencies(b *testing.B, url string, n int) []float64 {
	out := make([]float64, 0, n)
	for range n {
		began := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, float64(time.Since(began).Microseconds())/1000)
		time.Sleep(50 * time.Millisecond)
	}
	return out
}

// percentile is the q-th quantile of v (nearest rank).
func percentile(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
