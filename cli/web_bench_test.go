package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/internal/browsertest"
)

// pagesOpen is how many browser tabs the page benchmark keeps open.
const pagesOpen = 50

// BenchmarkStatusAPIWith50PagesOpen measures what the page costs the
// daemon: the built binary runs on the sim source in real time (a sample a
// second, six GPUs), and 50 tabs of the real headless Chromium keep its
// page open, each asking for the GPUs every second. One op is one GET
// /api/v1/status from another client, 50 ms apart. It reports that
// request's latency at the 50th and 99th percentile with the 50 pages open
// and, measured the same way before they opened, without them; and the
// daemon's resident memory (VmRSS) without and with them.
//
//	GPUWATCH_BROWSER_TESTS=1 go test ./cli -run '^$' -bench BenchmarkStatusAPIWith50PagesOpen -benchtime 400x
func BenchmarkStatusAPIWith50PagesOpen(b *testing.B) {
	browser := browsertest.Browser(b, chromedp.Flag("renderer-process-limit", "8"))
	dir := b.TempDir()
	bin := filepath.Join(dir, "gpuwatch")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/gpuwatch").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(b)
	cfg := strings.Replace(pageConfig(dir, fmt.Sprintf("{listen: %q}", addr)), "interval: 5s, sim: {scenario: all, seed: 1, speed: 60}",
		"interval: 1s, sim: {scenario: all, seed: 1, speed: 1}", 1)
	path := filepath.Join(dir, "gpuwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
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
	rssIdle, _, _ := processMemory(memory)

	for range pagesOpen {
		tab := browsertest.Tab(b, browser)
		browsertest.Do(b, tab, time.Minute, "open a page", chromedp.Navigate("http://"+addr+"/"))
	}
	time.Sleep(10 * time.Second) // every page has loaded and refreshed a few times
	b.ResetTimer()
	busy := statusLatencies(b, status, b.N)
	b.StopTimer()
	rssBusy, hwm, ok := processMemory(memory)
	if !ok {
		b.Fatalf("gpuwatch run exited during the benchmark:\n%s", stderr.String())
	}
	b.ReportMetric(percentile(busy, 0.50), "p50-ms")
	b.ReportMetric(percentile(busy, 0.99), "p99-ms")
	b.ReportMetric(percentile(idle, 0.99), "p99-ms-no-pages")
	b.ReportMetric(rssIdle, "RSS-MiB-no-pages")
	b.ReportMetric(rssBusy, "RSS-MiB")
	b.ReportMetric(hwm, "peak-RSS-MiB")
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
