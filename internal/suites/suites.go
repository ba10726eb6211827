// Package suites decides which of gpuwatch's long test suites run. `go
// test ./...` runs the tests every change needs, in a few minutes on two
// cores; the suites that start the real Prometheus, Alertmanager, promtool
// and VictoriaMetrics (Fleet), drive the real Chromium (Browser), and
// those that take minutes (Long), run only when their variable asks for
// them and -short is off. `.ci/run` asks for all of them.
//
// A variable set to any value but "" or "0" runs its suite; "require" (CI
// sets it) also turns a program the suite needs but cannot find from a
// skip into a failure.
package suites

import (
	"fmt"
	"os"
	"testing"
)

// The variables that ask for the suites.
const (
	FleetEnv   = "GPUWATCH_FLEET_TESTS"
	LongEnv    = "GPUWATCH_LONG_TESTS"
	BrowserEnv = "GPUWATCH_BROWSER_TESTS"
)

// Fleet skips the test unless the fleet suite is asked for: the tests that
// run the real Prometheus, Alertmanager, promtool or VictoriaMetrics.
func Fleet(t testing.TB) {
	gate(t, FleetEnv, "it runs the real Prometheus, Alertmanager, promtool or VictoriaMetrics")
}

// Long skips the test unless the long suite is asked for: the tests that
// take minutes.
func Long(t testing.TB) { gate(t, LongEnv, "it takes minutes") }

// Browser skips the test unless the browser suite is asked for: the
// tests that drive the real headless Chromium through the page.
func Browser(t testing.TB) { gate(t, BrowserEnv, "it drives the real Chromium") }

// Asked reports whether the suite of env is asked for (and -short is off),
// for a test that runs with or without it and does more when it is.
func Asked(env string) bool {
	v := os.Getenv(env)
	return !testing.Short() && v != "" && v != "0"
}

// Required reports whether the suite of env must find every program it
// needs: a missing one fails the test instead of skipping it.
func Required(env string) bool { return os.Getenv(env) == "require" }

func gate(t testing.TB, env, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s", why)
	}
	if !Asked(env) {
		t.Skip(fmt.Sprintf("%s; set %s=1 to run it", why, env))
	}
}
