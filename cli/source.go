package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/kube"
	"github.com/gpuwatch/gpuwatch/gpu/nvml"
	"github.com/gpuwatch/gpuwatch/gpu/proc"
	"github.com/gpuwatch/gpuwatch/gpu/prometheus"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/plural"
)

// hostName is the config's host or, by default, the machine's name.
func hostName(c *config.Config) string {
	if c == nil {
		c = &config.Config{}
	}
	return c.HostName()
}

// openSource builds the source the config names.
func openSource(c *config.Config, env *Env, logger *slog.Logger) (gpu.Source, error) {
	host := hostName(c)
	switch c.Source.Type {
	case "sim":
		// A simulation that runs live starts now: its snapshots, and the
		// daemon's clock (see sourceClock), agree with the wall clock.
		s, err := sim.New(sim.Config{Scenario: c.Source.Sim.Scenario, Seed: c.Source.Sim.Seed,
			Start: time.Now().Truncate(time.Second), Step: c.Source.Interval, Host: host, Loop: true})
		if err != nil {
			return nil, userErr(err)
		}
		return gpu.Pace(s, c.Source.Sim.Speed), nil
	case "prometheus":
		opts, err := c.PrometheusOptions()
		if err != nil {
			return nil, userErr(err)
		}
		opts.Logger = logger
		s, err := prometheus.New(opts)
		if err != nil {
			return nil, userErr(err)
		}
		return s, nil
	case "replay":
		r, err := replay.Open(c.Source.Replay.File, replayOptions(c, env, logger))
		if err != nil {
			return nil, replayErr(err)
		}
		return gpu.Pace(r, c.Source.Replay.Speed), nil
	default:
		pods, err := openPods(c, logger)
		if err != nil {
			return nil, err
		}
		s, err := openNVML(host, pods, logger)
		if err != nil {
			return nil, err
		}
		return gpu.Poll(s, c.Source.Interval), nil
	}
}

// replayOptions are the options a replay source's config gives its log.
// A log is of its own host: the config's host: when it sets one, else the
// host the log names, or its file's name.
func replayOptions(c *config.Config, env *Env, logger *slog.Logger) replay.Options {
	rs := c.Source.Replay
	var total uint64 // 0: from the log, or the GPU's name
	if rs.MemoryTotal != "" {
		total, _ = replay.ParseMemory(rs.MemoryTotal) // checked with the config
	}
	return replay.Options{Host: c.Host, Location: env.Location, Logger: logger,
		Columns: rs.Columns, MemoryTotal: total, SkipBad: rs.SkipBad, Step: rs.Step, Warnings: env.Stderr}
}

// openPods is the Kubernetes API server's list of this node's pods when
// the config names the node (source.kubernetes), else nil. It lists
// nothing yet: the first process of a pod starts the first list.
func openPods(c *config.Config, logger *slog.Logger) (proc.PodDirectory, error) {
	o, ok, err := c.KubernetesOptions(os.Getenv)
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, userErr(err)
	}
	o.Logger = logger
	pods, err := kube.New(o)
	if err != nil {
		return nil, userErr(fmt.Errorf("source.kubernetes: %w", err))
	}
	return pods, nil
}

// openNVML opens the GPUs of this machine; pods, when not nil, names
// the pods of their processes with their labels.
func openNVML(host string, pods proc.PodDirectory, logger *slog.Logger) (*nvml.Sampler, error) {
	s, err := nvml.OpenSystem(nvml.Options{Host: host, Attributor: proc.NewReader("", "", pods), Logger: logger})
	if errors.Is(err, nvml.ErrLibraryNotFound) {
		return nil, fmt.Errorf("open NVML: %w, or run the daemon on simulated GPUs: `source: {type: sim}` in its config", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open NVML: %w", err)
	}
	return s, nil
}

// demoStart is when the demo's simulated time begins: 09:00 today (as of
// now, in loc), so that its alerts are of today where they are read (Slack
// says "Today 09:33", not a date long past), and a demo with a seed prints
// the same times on every run of a day.
func demoStart(now time.Time, loc *time.Location) time.Time {
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d, 9, 0, 0, 0, loc)
}

// sourceClock is the clock of a source that runs in its own time, paced
// (gpu.Pacer): the daemon stamps silences, acknowledgements, the API and
// digests with it, so they agree with the snapshots. Nil for a source on
// the wall clock.
func sourceClock(src gpu.Source) func() time.Time {
	if c, ok := src.(interface{ Now() time.Time }); ok {
		return c.Now
	}
	return nil
}

// noSamples is the error of a log without a single sample to read: only a
// header, or every row malformed and skipped.
func noSamples(path string, skipped int) error {
	if skipped > 0 {
		return userErrf("%s has no samples: all %s were malformed and skipped", path, plural.Count(skipped, "row"))
	}
	return userErrf("%s has no samples: it holds no rows below its header; log with nvidia-smi --query-gpu=… --format=csv -l 5 for a while first", path)
}

// replayErr marks CSV problems as the user's (exit 1); I/O failures, a
// missing log too, are runtime ones (exit 3).
func replayErr(err error) error {
	var pe *replay.ParseError
	if errors.As(err, &pe) {
		return userErr(err)
	}
	return err
}
