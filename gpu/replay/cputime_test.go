package replay

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used so far. On a shared
// machine a benchmark's wall-clock rate says how busy the other processes
// were; rows per CPU second say what one core does (run with -cpu 1, so
// the process computes on one core at a time).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRates reports rows per second, wall-clock and of CPU time since
// cpuStart.
func reportRates(b *testing.B, rows int, cpuStart time.Duration) {
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	if cpu := cpuTime(b) - cpuStart; cpu > 0 {
		b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
	}
}
