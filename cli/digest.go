package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
	"github.com/gpuwatch/gpuwatch/digest"
	"github.com/gpuwatch/gpuwatch/gpu"
	"github.com/gpuwatch/gpuwatch/rules"
	"github.com/gpuwatch/gpuwatch/store"
)

func digestCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "digest", "--config FILE | --trace LOG [--window 24h] [--top-users N] [--price-per-kwh X --currency EUR]", `
Prints a usage digest now: per GPU utilization, memory, busy and idle-held
hours, temperature and energy; the top users; who held a GPU idle; and the
alerts that fired. With --config it reads what gpuwatch run recorded (from
the running daemon, or from storage.path when it is stopped); the window
ends now. With --trace it is computed from a GPU log (any log replay
reads), no store or daemon needed; the window ends at the log's last
sample, and a log sampled every few minutes or hours counts each sample
for the time since the one before (up to three of its steps).`)
	trace := fs.String("trace", "", "the GPU log to digest")
	configPath := fs.String("config", "", "the config of gpuwatch run, whose recorded usage to digest; with --trace: whose host name and rules to use")
	window := fs.Duration("window", 0, "how far back to look, e.g. 24h (default: 24h with --config, the whole log with --trace)")
	topUsers := fs.Int("top-users", digest.DefaultTopUsers, "how many users to list")
	price := fs.Float64("price-per-kwh", 0, "energy price per kWh, to show what the energy cost (default: no cost shown)")
	currency := fs.String("currency", "", "the price's currency, e.g. EUR")
	name := fs.String("name", "", "with --config: the digest of the config whose settings (top_users, price) to use (default: the first)")
	format := fs.String("format", "text", "output: text, markdown, blocks (Slack Block Kit JSON), json (the report's data) or png (the picture of the day, one per host)")
	out := fs.String("out", "", "with --format png: the file to write (a fleet's other hosts go to FILE-HOST.png); default: standard output")
	lf := addLogFlags(fs)
	logLevel := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(args) > 0:
		return noArgs("digest", args)
	case *trace == "" && *configPath == "":
		return usageErrf("digest: say what to digest: gpuwatch digest --config FILE (what gpuwatch run recorded) or --trace LOG.csv")
	case *window < 0:
		return usageErrf("digest: --window %s is negative: give how far back to look, e.g. --window 24h", *window)
	case *window > 0 && *window < time.Hour:
		return usageErrf("digest: --window %s is shorter than an hour: usage is kept by the hour; give 1h or more", *window)
	case *topUsers < 1:
		return usageErrf("digest: --top-users %d: list at least 1 user", *topUsers)
	case *price < 0:
		return usageErrf("digest: --price-per-kwh %g is negative: give the price of one kWh, e.g. 0.30", *price)
	case *currency != "" && *price == 0:
		return usageErrf("digest: --currency %s needs --price-per-kwh", *currency)
	}
	form, err := digest.ParseFormat(*format)
	if err != nil {
		return usageErrf("digest: --%v", err)
	}
	if *out != "" && form != digest.FormatPNG {
		return usageErrf("digest: --out is for --format png; the other formats print")
	}
	logger, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	// What was recorded is read with the daemon's storage (or from its
	// API) and digested with its settings; a log, with its rules.
	parts := []config.Part{config.PartHost, config.PartStorage, config.PartServer, config.PartDigests}
	if *trace != "" {
		parts = []config.Part{config.PartHost, config.PartRules, config.PartRuleFiles}
	}
	cfg, err := configOrExample(*configPath, env, parts...)
	if err != nil {
		return err
	}
	opts := digest.Options{Name: "usage", Host: hostName(cfg), TopUsers: *topUsers, PricePerKWh: *price, Currency: *currency, Location: env.Location}
	if *trace == "" {
		if err := digestSettings(cfg, *name, fs, &opts); err != nil {
			return err
		}
		return digestFromStore(ctx, env, cfg, *window, output{form, *out}, opts)
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
	rollups := digest.NewRollups()
	if probe.step > 0 {
		opts.Step, opts.MaxGap = probe.step, digest.MaxGapFor(probe.step)
		rollups.SetMaxGap(opts.MaxGap)
	}
	if probe.burst > 1 {
		opts.Burst = probe.burst
		rollups.SetStep(probe.step) // the gap after a burst is a step, not a fraction of a second
	}
	firing := map[string]rules.Transition{} // alerts still firing, by rule and GPU
	var first, last time.Time
	recent, latest := gpu.NewRecentXIDs(), map[string]*gpu.Snapshot{} // for the GPUs' health at the end
	w := &watcher{
		source: probe,
		engine: rules.NewEngine(cfg.Rules, rules.Options{}),
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
			recent.Observe(s)
			latest[s.Host] = s
		},
	}
	if err := w.run(ctx); err != nil {
		return replayErr(err)
	}
	if last.IsZero() {
		return noSamples(*trace, r.Skipped())
	}
	for _, t := range firing {
		opts.Firing = append(opts.Firing, digest.FiringAlert{Alert: t.Alert, Since: t.StartsAt})
	}
	from := first
	if *window > 0 {
		from = last.Add(-*window)
	}
	opts.Name, opts.From, opts.To, opts.Host = "trace", from, last, r.Host()
	for _, s := range latest {
		for i := range s.Devices {
			d := &s.Devices[i]
			if d.MIG != nil {
				continue // a MIG instance's health is its GPU's
			}
			opts.Health = append(opts.Health, digest.GPUHealth{Host: s.Host, GPU: d.Index, UUID: d.UUID, Verdict: gpu.Assess(d, recent.Of(s.Host, d, last))})
		}
	}
	return printDigest(env, rollups, opts, output{form, *out})
}

// output is where and how a digest is written: --format and --out.
type output struct {
	format digest.Format
	file   string
}

// printDigest builds the report of opts' window from rollups and prints it
// (or, for png, writes its pictures).
func printDigest(env *Env, rollups *digest.Rollups, opts digest.Options, o output) error {
	gpus, users, alerts := rollups.Window(opts.From, opts.To)
	if o.format == digest.FormatPNG {
		return writePictures(env, digest.Pictures(gpus, users, opts), opts.Location, o.file)
	}
	out, err := digest.Build(gpus, users, alerts, opts).Render(o.format)
	if err != nil {
		return err
	}
	_, err = env.Stdout.Write(out)
	return err
}

// digestSettings takes top_users and the price from the config's digest
// (named, or the first), where the flags do not set them.
func digestSettings(cfg *config.Config, name string, fs *flag.FlagSet, opts *digest.Options) error {
	var d *config.Digest
	for i := range cfg.Digests {
		if cfg.Digests[i].Name == name || name == "" {
			d = &cfg.Digests[i]
			break
		}
	}
	switch {
	case d == nil && name != "":
		return userErrf("digest: --name %q: %s has no digest of that name", name, cfg.File)
	case d == nil:
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	opts.Name = d.Name
	if !set["top-users"] {
		opts.TopUsers = d.TopUsers
	}
	if !set["price-per-kwh"] && !set["currency"] {
		opts.PricePerKWh, opts.Currency = d.PricePerKWh, d.Currency
	}
	return nil
}

// digestFromStore digests the usage gpuwatch run recorded: from the store
// when the daemon is stopped, else (the store is locked) from its API, in
// the same form.
func digestFromStore(ctx context.Context, env *Env, cfg *config.Config, window time.Duration, o output, opts digest.Options) error {
	if window == 0 {
		window = 24 * time.Hour
	}
	// Reading a digest creates no state: without a store there is nothing
	// recorded yet.
	if _, err := os.Stat(cfg.Storage.Path); errors.Is(err, os.ErrNotExist) {
		return nothingRecorded(cfg)
	}
	db, err := store.OpenContext(ctx, cfg.Storage.Path, store.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if errors.Is(err, store.ErrInUse) {
		c, err := newAPIClient(env, "", &cfg.Server, credentials{})
		if err != nil {
			return err
		}
		query := url.Values{"window": {window.String()}, "format": {string(o.format)}}
		if opts.Name != "usage" {
			query.Set("name", opts.Name)
		}
		body, err := c.getBytes(ctx, "/api/v1/digest?"+query.Encode())
		if err != nil {
			return err
		}
		if o.format == digest.FormatPNG {
			return writePNG(env, body, o.file)
		}
		_, err = env.Stdout.Write(body)
		return err
	}
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	defer db.Close()
	for _, note := range db.Recovered() {
		fmt.Fprintf(env.Stderr, "gpuwatch: %s\n", note)
	}
	records, err := db.All(daemon.BucketRollups)
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	if len(records) == 0 {
		return nothingRecorded(cfg)
	}
	rollups := digest.NewRollups()
	if err := rollups.Load(records); err != nil {
		var bad *digest.LoadError
		if !errors.As(err, &bad) {
			return fmt.Errorf("digest: %s: %w", cfg.Storage.Path, err)
		}
		// A read changes nothing: gpuwatch run sets them aside.
		fmt.Fprintf(env.Stderr, "gpuwatch: %s: %v\n", cfg.Storage.Path, err)
	}
	opts.To = time.Now()
	opts.From = opts.To.Add(-window)
	return printDigest(env, rollups, opts, o)
}

// nothingRecorded is the answer of a digest of a store without usage.
func nothingRecorded(cfg *config.Config) error {
	return userErrf("digest: nothing has been recorded yet in %s (storage.path of %s): gpuwatch run records usage as it samples "+
		"and saves it every few minutes; for an nvidia-smi log, use --trace", cfg.Storage.Path, cfg.File)
}
