package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/sim"
	"github.com/gpuwatch/gpuwatch/internal/plural"
	"github.com/gpuwatch/gpuwatch/rules"
)

func demoCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "demo", "[--speed N] [--scenario NAME] [--seed N] [--forever]", `
Shows gpuwatch working with no GPU and no account: simulated GPUs (a memory
leak that ends in out-of-memory, a batch spike to 97% memory, a GPU held but
idle, a fan failure, a healthy trainer, a GPU that falls off the bus) run
through the rules of config.example.yaml in accelerated time, and every
alert that fires or resolves is printed here — and posted to Slack too when SLACK_WEBHOOK_URL,
or SLACK_BOT_TOKEN (with SLACK_CHANNEL, default #gpuwatch-demo), is set.`)
	speed := fs.Float64("speed", 120, "simulated seconds per real second (0: as fast as possible)")
	scenario := fs.String("scenario", "all", "what to simulate: "+strings.Join(sim.Scenarios(), ", "))
	seed := fs.Uint64("seed", 1, "random seed: the same seed gives the same run")
	forever := fs.Bool("forever", false, "loop the scenario instead of ending after one run")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("demo", args); err != nil {
		return err
	}
	if *speed < 0 {
		return usageErrf("demo: --speed must be 0 or more, not %v", *speed)
	}
	logger, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg, err := configOrExample("", env)
	if err != nil {
		return err
	}
	src, err := sim.New(sim.Config{Scenario: *scenario, Seed: *seed, Start: demoStart(time.Now(), env.Location),
		Step: cfg.Source.Interval, Host: "demo-host", Loop: *forever})
	if err != nil {
		return usageErrf("demo: --scenario: %v", err)
	}
	defer src.Close()
	pace := "unpaced"
	if *speed > 0 {
		pace = fmt.Sprintf("%gx speed", *speed)
	}
	length := "looping until interrupted"
	if !*forever {
		length = src.Duration().String() + " of simulated time"
		if *speed > 0 {
			length += fmt.Sprintf(", about %s here", (time.Duration(float64(src.Duration()) / *speed)).Round(time.Second))
		}
	}
	fmt.Fprintf(env.Stdout, "gpuwatch demo: scenario %q, seed %d, %s from config.example.yaml, %s (%s).\n\n",
		*scenario, *seed, plural.Count(len(cfg.Rules), "rule"), pace, length)
	toSlack, err := newDemoSlack(env, logger)
	if err != nil {
		return err
	}
	var fired, resolved int
	print := textPrinter(env)
	w := &watcher{
		source: gpu.Pace(src, *speed),
		engine: rules.NewEngine(cfg.Rules, rules.Options{RepeatInterval: 4 * time.Hour, Logger: logger}),
		emit: func(ts []rules.Transition) error {
			for i := range ts {
				if ts[i].Resolved() {
					resolved++
				} else if !ts[i].Repeat {
					fired++
				}
			}
			if toSlack != nil {
				toSlack.send(ctx, ts)
			}
			return print(ts)
		},
	}
	if err := w.run(ctx); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "\ndemo finished: %s fired, %d resolved.\n"+
		"Next: gpuwatch replay --trace your-nvidia-smi-log.csv, or on a GPU server: gpuwatch run --config config.yaml\n", plural.Count(fired, "alert"), resolved)
	return nil
}
