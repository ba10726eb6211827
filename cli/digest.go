package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/rules"
)

func digestCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "digest", "--trace LOG.csv [--window 24h] [--top-users N] [--price-per-kwh X --currency EUR]", `
Prints a usage digest now: per GPU utilization, memory, busy and idle-held
hours, temperature and energy; the top users; who held a GPU idle; and the
alerts the rules would have fired. With --trace it is computed from an
nvidia-smi CSV log, no store or daemon needed; the window ends at the log's
last sample.`)
	trace := fs.String("trace", "", "the nvidia-smi CSV log to digest (required)")
	configPath := fs.String("config", "", "config whose host name and rules to use (default: the built-in example rules)")
	window := fs.Duration("window", 0, "how far back from the log's last sample to look, e.g. 24h (default: the whole log)")
	topUsers := fs.Int("top-users", digest.DefaultTopUsers, "how many users to list")
	price := fs.Float64("price-per-kwh", 0, "energy price per kWh, to show what the energy cost (default: no cost shown)")
	currency := fs.String("currency", "", "the price's currency, e.g. EUR")
	format := fs.String("format", "text", "output: text, markdown, blocks (Slack Block Kit JSON) or json (the report's data)")
	skipBad := fs.Bool("skip-bad", false, "skip malformed rows instead of stopping at the first")
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return userErrf("digest: unexpected argument %q: flags only (see gpuwatch digest --help)", fs.Arg(0))
	case *trace == "":
		return userErrf("digest: name the log to digest: gpuwatch digest --trace LOG.csv")
	case *window < 0:
		return userErrf("digest: --window %s is negative: give how far back to look, e.g. --window 24h", *window)
	case *topUsers < 1:
		return userErrf("digest: --top-users %d: list at least 1 user", *topUsers)
	case *price < 0:
		return userErrf("digest: --price-per-kwh %g is negative: give the price of one kWh, e.g. 0.30", *price)
	case *currency != "" && *price == 0:
		return userErrf("digest: --currency %s needs --price-per-kwh", *currency)
	}
	if _, err := renderDigest(&digest.Report{}, *format); err != nil {
		return err
	}
	logger, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg, err := configOrExample(*configPath, env)
	if err != nil {
		return err
	}
	host := hostName(cfg)
	r, err := replay.Open(*trace, replay.Options{Host: host, Location: env.Location, SkipBad: *skipBad, Logger: logger})
	if err != nil {
		return replayErr(err)
	}
	defer r.Close()

	rollups := digest.NewRollups()
	firing := map[string]rules.Transition{} // alerts still firing, by rule and GPU
	var first, last time.Time
	w := &watcher{
		source: r,
		engine: rules.NewEngine(cfg.Rules, rules.Options{}),
		logger: logger,
		emit: func(ts []rules.Transition) error {
			for _, t := range ts {
				key := fmt.Sprintf("%s/%d/%s", t.Alert, t.GPU, t.UUID)
				switch {
				case t.Resolved():
					delete(firing, key)
					rollups.RecordAlert(t.Alert, t.StartsAt, t.EndsAt.Sub(t.StartsAt))
				case !t.Repeat:
					firing[key] = t
				}
			}
			return nil
		},
		onSnapshot: func(s *gpu.Snapshot) {
			if first.IsZero() {
				first = s.Time
			}
			last = s.Time
			rollups.Update(s)
		},
	}
	if err := w.run(ctx); err != nil {
		return replayErr(err)
	}
	if last.IsZero() {
		return userErrf("digest: %s has no samples", *trace)
	}
	for _, t := range firing {
		rollups.RecordAlert(t.Alert, t.StartsAt, last.Sub(t.StartsAt))
	}
	from := first
	if *window > 0 {
		from = last.Add(-*window)
	}
	gpus, users, alerts := rollups.Window(from, last)
	rep := digest.Build(gpus, users, alerts, digest.Options{Name: "trace", Host: host, From: from, To: last,
		TopUsers: *topUsers, PricePerKWh: *price, Currency: *currency, Location: env.Location})
	out, err := renderDigest(rep, *format)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(env.Stdout, out)
	return err
}

// renderDigest renders a report in the form --format names.
func renderDigest(r *digest.Report, format string) (string, error) {
	switch format {
	case "text":
		return r.Text(), nil
	case "markdown":
		return r.Markdown(), nil
	case "blocks":
		b, err := r.Blocks()
		return string(b) + "\n", err
	case "json":
		n, err := r.Notification("", r.To)
		if err != nil {
			return "", err
		}
		return string(n.Digest.Data) + "\n", nil
	}
	return "", userErrf("digest: --format %q: use text, markdown, blocks or json", format)
}
