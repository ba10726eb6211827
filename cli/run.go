package cli

import (
	"context"
	"log/slog"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/notifier/console"
	"github.com/gpuwatch/gpuwatch/rules"
)

func runCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "run", "--config FILE", `
The daemon: samples the GPUs every source.interval, evaluates the rules at
each sample and prints every alert that fires or resolves. SIGHUP reloads
the config (a bad new config is refused and the old one kept); SIGINT and
SIGTERM stop it cleanly.`)
	path := fs.String("config", "", "the config file (required)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if *path == "" {
		return userErrf("run: name the config file: gpuwatch run --config FILE (start from config.example.yaml)")
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
	logger.Info("gpuwatch started", "config", *path, "source", cfg.Source.Type, "interval", cfg.Source.Interval, "rules", len(cfg.Rules), "host", hostName(cfg))
	w := &watcher{
		source:   src,
		engine:   newEngine(cfg),
		notifier: console.New(env.Stdout, env.Location),
		logger:   logger,
	}
	w.reload = func() *rules.Engine { return reloadConfig(env, *path, cfg, w.engine, logger) }
	err = w.run(ctx)
	switch {
	case ctx.Err() != nil:
		logger.Info("gpuwatch stopped", "reason", context.Cause(ctx))
		return nil
	case err == nil:
		logger.Info("gpuwatch stopped: the source has no more samples")
	}
	return err
}

func newEngine(cfg *config.Config) *rules.Engine {
	return rules.NewEngine(cfg.Rules, rules.Options{RepeatInterval: cfg.Route.RepeatInterval})
}

// reloadConfig loads the config again when a reload was asked for. A bad
// config is refused and the running one kept; a good one gives a new engine
// that keeps the state of every rule it shares with the old one.
func reloadConfig(env *Env, path string, running *config.Config, old *rules.Engine, logger *slog.Logger) *rules.Engine {
	select {
	case <-env.Reload:
	default:
		return nil
	}
	cfg, err := loadConfig(path, &Env{Stdout: env.Stdout, Stderr: env.Stderr, LookupEnv: env.LookupEnv})
	if err != nil {
		logger.Error("reload refused: the config has problems (printed above); still running the previous one", "config", path)
		return nil
	}
	if cfg.Source != running.Source {
		logger.Warn("source settings changed; they take effect when gpuwatch restarts", "config", path)
	}
	e := newEngine(cfg)
	e.Inherit(old)
	logger.Info("config reloaded", "config", path, "rules", len(cfg.Rules))
	return e
}
