package cli

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/daemon"
)

func runCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "run", "[--config] FILE", `
The daemon: samples the GPUs every source.interval, evaluates the rules at
each sample and sends every alert that fires or resolves to its receivers
through a durable outbox (storage.path); keeps hourly usage rollups and posts
the digests on their schedules; and serves, on server.listen, a page for the
browser at / (the GPUs now, alerts and silences, history, the digest),
/metrics, the JSON API (gpuwatch silence, outbox and digest use it) and,
with a Slack signing secret, the /gpu command and the buttons on alerts. SIGHUP reloads
the config (a bad new config is refused and the old one kept); SIGINT and
SIGTERM stop it cleanly.`)
	path := fs.String("config", "", "the config file (required)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if *path == "" && len(args) == 0 {
		return usageErrf("run: name the config file: gpuwatch run --config FILE (start from config.example.yaml)")
	}
	if err := fileArg("run", "config", "config file", "FILE", path, args); err != nil {
		return err
	}
	logger, err := newLogger(env.Stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(*path, env)
	if err != nil {
		return err
	}
	src, err := openSource(cfg, env, logger)
	if err != nil {
		return err
	}
	defer src.Close()
	d, err := daemon.NewContext(ctx, cfg, daemon.Options{Logger: logger, Console: env.Stdout, Location: env.Location, Version: Build().Version,
		Now: sourceClock(src)})
	if err != nil {
		return err
	}
	defer d.Close()
	logger.Info("gpuwatch started", "version", Build().Version, "config", *path, "source", cfg.Source.Type, "interval", cfg.Source.Interval,
		"rules", len(cfg.Rules), "receivers", len(cfg.Receivers), "host", hostName(cfg), "storage", cfg.Storage.Path)
	reloads := make(chan *config.Config, 1)
	go watchReloads(ctx, env, *path, cfg, reloads, logger)
	// A stop that could not write everything is a failure: it says what
	// is lost and exits non-zero.
	if err := d.Run(ctx, src, reloads); err != nil {
		return err
	}
	if ctx.Err() != nil {
		logger.Info("gpuwatch stopped", "reason", context.Cause(ctx))
	}
	return nil
}

// watchReloads loads the config again at each reload signal and hands a
// valid one to the daemon; a config with problems is refused (they are
// printed) and the running one kept.
func watchReloads(ctx context.Context, env *Env, path string, running *config.Config, out chan<- *config.Config, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-env.Reload:
		}
		cfg, err := loadConfig(path, &Env{Stdout: env.Stdout, Stderr: env.Stderr, LookupEnv: env.LookupEnv})
		if err != nil {
			// Problems with positions are printed above; a file that cannot
			// be read is only in err.
			logger.Error("reload refused; still running the previous config", "config", path, "err", err)
			continue
		}
		if cfg.Source != running.Source || cfg.Storage != running.Storage || !reflect.DeepEqual(cfg.Server, running.Server) {
			logger.Warn("source, storage and server settings take effect when gpuwatch restarts", "config", path)
		}
		select {
		case out <- cfg:
		case <-ctx.Done():
			return
		}
	}
}
