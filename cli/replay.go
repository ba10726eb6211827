package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/notifier"
	"github.com/gpuwatch/gpuwatch/notifier/console"
	"github.com/gpuwatch/gpuwatch/rules"
)

func replayCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "replay", "[--trace] LOG [--config FILE] [--json] [--plot FILE.png] [--columns LIST] [--host NAME] [--step D] [--skip-bad]", `
Evaluates the rules over a GPU log, at the log's own timestamps, and prints
every alert that fires or resolves. Nothing is sent anywhere. Without
--config the rules of config.example.yaml are used. The log may be
nvidia-smi --query-gpu CSV (with or without its header, index, uuid or
timestamp), nvidia-smi's table printed again and again (watch captures
included), nvidia-smi dmon, gpustat, a GPU-Z sensor log, an MSI
Afterburner log, or a script's CSV (pynvml, GPUtil, nvitop) or text lines
with a time and named readings; the format is told from the first lines.
Make a log with:
  nvidia-smi --query-gpu=timestamp,index,name,uuid,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw --format=csv -l 5 > gpu.csv`)
	configPath := fs.String("config", "", "config file whose rules to evaluate (default: the built-in example rules)")
	trace := fs.String("trace", "", "the GPU log to replay (required; or give it as the argument)")
	asJSON := fs.Bool("json", false, `print one JSON object per transition: {"at","alert","gpu","uuid","state","severity","repeat","value"}`)
	lf := addLogFlags(fs)
	plotPath := fs.String("plot", "", "also draw the log to this PNG file: memory and utilization per GPU, each alert marked where it fired and resolved")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := fileArg("replay", "trace", "log to replay", "LOG.csv", trace, args); err != nil {
		return err
	}
	plot := newReplayPlot(*plotPath, *trace)
	logger, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg, err := configOrExample(*configPath, env, config.PartHost, config.PartRules, config.PartRuleFiles)
	if err != nil {
		return err
	}
	r, err := lf.open(*trace, cfg, env, logger)
	if err != nil {
		return err
	}
	defer r.Close()
	probe := probeStep(ctx, r)
	if w := sparseWarning(cfg.Rules, probe.step); w != "" {
		fmt.Fprintln(env.Stderr, w)
	}
	print := textPrinter(env)
	if *asJSON {
		print = jsonPrinter(env.Stdout)
	}
	var snapshots, transitions int
	var first, last time.Time
	w := &watcher{
		source: probe,
		engine: rules.NewEngine(cfg.Rules, rules.Options{Logger: logger}),
		emit: func(ts []rules.Transition) error {
			transitions += len(ts)
			plot.transitions(ts)
			return print(ts)
		},
		onSnapshot: func(s *gpu.Snapshot) {
			plot.snapshot(s)
			if snapshots == 0 {
				first = s.Time
				for _, w := range logCoverage(cfg.Rules, s, *trace) {
					fmt.Fprintln(env.Stderr, w)
				}
			}
			snapshots, last = snapshots+1, s.Time
		},
	}
	if err := w.run(ctx); err != nil {
		return replayErr(err)
	}
	if snapshots == 0 {
		return noSamples(*trace, r.Skipped())
	}
	fmt.Fprintf(env.Stderr, "replayed %s (%s of data, %s to %s; %s of %s%s%s): %s",
		plural.Count(snapshots, "snapshot"), last.Sub(first).Round(time.Second), first.In(env.Location).Format(timeLayout), last.In(env.Location).Format(timeLayout),
		r.Format(), r.Host(), lf.hostNote(*trace, cfg, r), probe.sampling(), plural.Count(transitions, "transition"))
	if n := r.Skipped(); n > 0 {
		fmt.Fprintf(env.Stderr, "; %s skipped", plural.Count(n, "malformed row"))
	}
	fmt.Fprintln(env.Stderr)
	return plot.write(env)
}

func textPrinter(env *Env) func([]rules.Transition) error {
	n := console.New(env.Stdout, env.Location)
	return func(ts []rules.Transition) error {
		alerts := make([]notifier.Alert, len(ts))
		for i := range ts {
			alerts[i] = notifier.FromTransition(&ts[i])
		}
		return n.Print(alerts...)
	}
}

// transitionJSON is one line of `replay --json`.
type transitionJSON struct {
	At       string   `json:"at"`
	Alert    string   `json:"alert"`
	GPU      int      `json:"gpu"`
	UUID     string   `json:"uuid"`
	State    string   `json:"state"`
	Severity string   `json:"severity"`
	Repeat   bool     `json:"repeat"` // a reminder of an alert already announced
	Value    *float64 `json:"value"`  // null when unknown
	// MIG is the MIG instance the alert is about (uuid is then its own);
	// absent for a whole GPU.
	MIG *gpu.MIG `json:"mig,omitempty"`
	// PID is the process of a rule that runs per process; absent otherwise.
	PID int `json:"pid,omitempty"`
}

func jsonPrinter(w io.Writer) func([]rules.Transition) error {
	enc := json.NewEncoder(w)
	return func(ts []rules.Transition) error {
		for i := range ts {
			t := &ts[i]
			line := transitionJSON{At: t.At.Format(time.RFC3339), Alert: t.Alert, GPU: t.GPU, UUID: t.UUID,
				State: t.StateName(), Severity: string(t.Severity), Repeat: t.Repeat, MIG: t.MIG}
			if t.Process != nil {
				line.PID = t.Process.PID
			}
			if !math.IsNaN(t.Value) && !math.IsInf(t.Value, 0) {
				line.Value = &t.Value
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		return nil
	}
}
