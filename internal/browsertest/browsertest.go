// Package browsertest runs the real headless Chromium for gpuwatch's page
// tests, driven through the DevTools protocol (chromedp): a fresh profile
// per test, loopback only, closed when the test ends. The browser tests
// are a suite of their own (internal/suites): they run when
// GPUWATCH_BROWSER_TESTS asks for them, and when it is "require" (CI sets
// it) a missing Chromium fails them instead of skipping them.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/gpuwatch/gpuwatch/internal/suites"
)

// RequireEnv names the variable that asks for the browser suite, and with
// "require" turns a missing Chromium from a skip into a failure.
const RequireEnv = suites.BrowserEnv

// ArtifactsEnv names the folder screenshots and measurements are saved
// in; without it they go to the test's temporary folder.
const ArtifactsEnv = "GPUWATCH_ARTIFACTS"

// install says how to get Chromium on Debian or Ubuntu.
const install = "apt-get install chromium"

// Chromium returns the browser's path, skipping the test unless the
// browser suite is asked for, and when Chromium is missing (failing it
// instead where the variable is "require").
func Chromium(t testing.TB) string {
	t.Helper()
	suites.Browser(t)
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("Chromium is not installed (%s to run the browser tests)", install)
	if suites.Required(RequireEnv) {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Browser starts a headless Chromium with a fresh profile and returns a
// context whose tab chromedp drives; more tabs come from Tab. It ends with
// the test.
func Browser(t testing.TB, extraFlags ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := Chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.WindowSize(1280, 900),
	}
	opts = append(opts, extraFlags...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return ctx
}

// Tab opens another tab in browser's Chromium.
func Tab(t testing.TB, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// Do runs actions in tab within timeout, failing the test with what
// failed.
func Do(t testing.TB, tab context.Context, timeout time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in tab and decodes its value,
// failing the test when it cannot.
func Eval[T any](t testing.TB, tab context.Context, what, expression string) T {
	t.Helper()
	v, err := TryEval[T](tab, expression)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TryEval evaluates a JavaScript expression in tab and decodes its value;
// an error where the page threw or was between two documents.
func TryEval[T any](tab context.Context, expression string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
}

// Viewport sets the tab's size as a device of that width shows it: a
// phone is mobile, with touch and two device pixels to a CSS pixel.
func Viewport(width, height int, phone bool) chromedp.Action[chromedp.Void] {
	if phone {
		return chromedp.EmulateViewport(int64(width), int64(height), chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	return chromedp.EmulateViewport(int64(width), int64(height))
}

// Artifacts is the folder screenshots and measurements go to.
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot saves, as name.png in the artifacts folder, the tab's whole
// page or, when screenOnly, what its screen shows, scrolled to the top;
// it returns the file's path.
func Screenshot(t testing.TB, tab context.Context, name string, screenOnly bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	shot := chromedp.FullScreenshot(100)
	if screenOnly {
		shot = chromedp.CaptureScreenshot()
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatalf("scroll to the top: %v", err)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(Artifacts(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// DarkMode makes the tab's page see the system asking for dark colours
// (prefers-color-scheme: dark).
func DarkMode() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	})
}
