//go:build race

package promexport_test

// raceDetector: the tests that run promtool over hours of samples check
// Prometheus's evaluation of the exported rules, not gpuwatch's
// goroutines; go test without -race runs them.
const raceDetector = true
