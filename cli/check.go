package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuwatch/gpuwatch/config"
	"github.com/gpuwatch/gpuwatch/gpu/replay"
	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
)

func checkCommand(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "check", "[--config] FILE", `
Validates the config file and every rule file it names, and tries the rules
on simulated samples of an eight-GPU server: a sample that takes longer than
source.interval is a problem. With a people: section and slack.bot_token,
asks Slack about each person the section names and warns about those it
does not know. Prints each problem as FILE:LINE:COL: message and exits 1;
prints a one-line summary and exits 0 when everything is valid.`)
	path := fs.String("config", "", "the config file to check (required)")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := fileArg("check", "config", "config file", "FILE", path, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path, env)
	if err != nil {
		return err
	}
	if cfg.Source.Type == "replay" {
		if err := checkReplaySource(ctx, cfg, env); err != nil {
			return err
		}
	}
	for _, w := range append(cfg.Warnings(), checkPeople(ctx, cfg)...) {
		fmt.Fprintln(env.Stderr, "warning: "+w)
	}
	problem, warning, err := checkEvaluationTime(ctx, cfg)
	switch {
	case err != nil:
		return err
	case problem != nil:
		fmt.Fprintln(env.Stderr, problem)
		return userErrf("%s is not valid", *path)
	case warning != nil:
		fmt.Fprintln(env.Stderr, warning)
	}
	fmt.Fprintln(env.Stdout, cfg.Summary())
	return nil
}

// checkReplaySource reads the first sample of the log a replay source
// names, so a missing or malformed log, or rules the log cannot feed, show
// up at check time.
func checkReplaySource(ctx context.Context, cfg *config.Config, env *Env) error {
	opts := replayOptions(cfg, env, nil)
	opts.Warnings = nil // the replay's notes are its own
	r, err := replay.Open(cfg.Source.Replay.File, opts)
	if err != nil {
		// The config names a log that is not there: a problem check
		// finds in the config (exit 1), as it finds the others.
		return userErrf("source.replay.file: %v", err)
	}
	defer r.Close()
	first, err := r.Next(ctx)
	if err != nil {
		return replayErr(fmt.Errorf("source.replay.file: %w", err))
	}
	for _, w := range logCoverage(cfg.Rules, first, cfg.Source.Replay.File) {
		fmt.Fprintln(env.Stderr, w)
	}
	return nil
}

// loadConfig loads a config; its problems are printed one per line and
// reported as a user error.
func loadConfig(path string, env *Env) (*config.Config, error) {
	cfg, err := config.Load(path, env.lookup())
	if err != nil {
		return nil, reportProblems(path, env, err)
	}
	return cfg, nil
}

// loadConfigParts is loadConfig for a command that uses only some parts of
// the config, as clients of the running daemon do: the ${VAR}s and
// problems of the other parts are not theirs (see config.LoadParts).
func loadConfigParts(path string, env *Env, parts ...config.Part) (*config.Config, error) {
	cfg, err := config.LoadParts(path, env.lookup(), parts...)
	if err != nil {
		return nil, reportProblems(path, env, err)
	}
	return cfg, nil
}

// reportProblems prints the problems of the config at path, one per line,
// and returns them as a user error; an error that is not about the
// config's text (it could not be read) is returned as it is.
func reportProblems(path string, env *Env, err error) error {
	var one *strictyaml.Error
	var list strictyaml.Errors
	if !errors.As(err, &one) && !errors.As(err, &list) {
		return err // the file could not be read: an I/O failure
	}
	problems := strictyaml.AsErrors(err)
	for _, p := range problems {
		fmt.Fprintln(env.Stderr, p)
	}
	if len(problems) == 1 {
		return userErrf("%s is not valid", path)
	}
	return userErrf("%s has %d problems", path, len(problems))
}
