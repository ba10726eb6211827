// Package cli implements gpuwatch's commands. cmd/gpuwatch only turns Main's
// result into an exit code, so tests run every command, the daemon
// included, in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier/console"
)

// Exit codes. A script tells "the input has problems" (1) from "the
// command was called wrong" (2) and from "the machine failed" (3): a
// service manager restarts after 3, not after 1 or 2.
const (
	ExitOK      = 0
	ExitUser    = 1 // problems found: a bad config, bad input, failed rule tests
	ExitUsage   = 2 // the command line is wrong: no or unknown command, unknown flag, missing or extra arguments
	ExitRuntime = 3 // the machine or the world failed: no NVML, I/O errors, no daemon to ask
)

// timeLayout is how commands write a time: with its zone, as the console
// receiver does.
const timeLayout = console.TimeLayout

// Env is what a command may use of the process around it.
type Env struct {
	// Stdin is standard input (a password for hash-password); nil reads
	// nothing.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Reload receives a value when the daemon should reload its config
	// (SIGHUP); nil never reloads.
	Reload <-chan struct{}
	// Location is the zone times are shown in; nil means UTC.
	Location *time.Location
	// LookupEnv reads environment variables (os.LookupEnv in main).
	LookupEnv func(string) (string, bool)
}

// lookup returns the environment lookup, os.LookupEnv by default.
func (env *Env) lookup() func(string) (string, bool) {
	if env.LookupEnv == nil {
		return os.LookupEnv
	}
	return env.LookupEnv
}

// userError marks an error as the user's to fix (exit 1).
type userError struct{ err error }

func (e userError) Error() string { return e.err.Error() }
func (e userError) Unwrap() error { return e.err }

func userErr(err error) error {
	if err == nil {
		return nil
	}
	return userError{err}
}

func userErrf(format string, args ...any) error { return userError{fmt.Errorf(format, args...)} }

// usageError marks a command line that is wrong (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

func commands() []command {
	return []command{
		{"run", "sample the GPUs, evaluate the rules and notify (the daemon)", runCommand},
		{"demo", "simulated GPUs in accelerated time: see gpuwatch work without a GPU", demoCommand},
		{"check", "validate a config and its rules; print every problem as FILE:LINE:COL", checkCommand},
		{"digest", "print a usage digest (per GPU, per user, idle holders, alerts) of what run recorded, or of an nvidia-smi log", digestCommand},
		{"replay", "evaluate the rules over an nvidia-smi CSV log and print each transition", replayCommand},
		{"test", "run rule unit tests (YAML files with input series and expected alerts)", testCommand},
		{"rules", "write the rules as a Prometheus rule file, and rule tests as promtool tests", rulesCommand},
		{"status", "one look at the GPUs now: memory, utilization, temperature, power, processes", statusCommand},
		{"silence", "add, list or expire silences in the running daemon", silenceCommand},
		{"outbox", "list notifications waiting for a receiver, and the dead letters", outboxCommand},
		{"hash-password", "make the bcrypt hash of a password, for server.basic_auth_users", hashPasswordCommand},
	}
}

// Main runs gpuwatch with the arguments after the program name and returns
// the exit code.
func Main(ctx context.Context, args []string, env *Env) int {
	if env.Location == nil {
		env.Location = time.UTC
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, "gpuwatch: name a command\n\n")
		usage(env.Stderr)
		return ExitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stdout)
		return ExitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		return report(env.Stderr, versionCommand(env, args[1:]))
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		return report(env.Stderr, err)
	}
	fmt.Fprintf(env.Stderr, "gpuwatch: unknown command %q\n\n", args[0])
	usage(env.Stderr)
	return ExitUsage
}

func report(w io.Writer, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitOK
	}
	fmt.Fprintf(w, "gpuwatch: %v\n", err)
	var ue userError
	var usage usageError
	var io *fs.PathError
	switch {
	case errors.As(err, &usage):
		return ExitUsage
	case errors.As(err, &io):
		// A file that cannot be read (missing, not allowed) is an I/O
		// failure, whoever named it.
		return ExitRuntime
	case errors.As(err, &ue):
		return ExitUser
	}
	return ExitRuntime
}

func usage(w io.Writer) {
	fmt.Fprint(w, `gpuwatch watches NVIDIA GPUs and tells people before a job runs out of memory,
when a GPU is held but idle, and when one runs hot or throws XID errors.

Usage: gpuwatch <command> [flags]

Commands:
`)
	width := len("version")
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-*s %s\n", width, "version", "print the version")
	fmt.Fprint(w, `
Start with "gpuwatch demo" (no GPU needed). "gpuwatch <command> --help" shows
a command's flags; flags may come before or after the arguments. Exit codes:
0 ok, 1 problems found (bad config or input, failed tests), 2 usage error,
3 runtime failure (no NVML, I/O errors, no daemon to ask).
`)
}

// newFlags makes a command's flag set; its --help prints the usage line,
// what the command does and its flags.
func newFlags(env *Env, name, args, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports mistakes; --help prints to stdout
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: gpuwatch %s %s\n\n%s\n\nFlags:\n", name, args, strings.TrimSpace(about))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, flags and arguments in any order (`silence add
// alert=GPUHot --duration 4h` as well as `silence add --duration 4h
// alert=GPUHot`; after "--" everything is an argument), and returns the
// arguments. --help prints the command's usage on stdout; a flag mistake
// is a usage error.
func parseFlags(env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(env.Stdout)
				fs.Usage()
				return nil, err
			}
			return nil, usageErrf("%s: %v (see gpuwatch %s --help)", fs.Name(), err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if stopped := len(args) - len(rest); stopped > 0 && args[stopped-1] == "--" {
			return append(positional, rest...), nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// fileArg takes the one file a command works on either from its flag
// (--config FILE) or as its only argument (FILE), and refuses anything
// more. what names the file in the error (config file, log), placeholder
// stands for it in the example (FILE, LOG.csv); value is the flag's value,
// set from the argument when the flag was not given.
func fileArg(command, flagName, what, placeholder string, value *string, args []string) error {
	example := fmt.Sprintf("gpuwatch %s --%s %s", command, flagName, placeholder)
	switch {
	case *value == "" && len(args) == 0:
		return usageErrf("%s: name the %s: %s", command, what, example)
	case *value == "" && len(args) == 1:
		*value = args[0]
	case *value == "":
		return usageErrf("%s: one %s at a time: got %q and %q (%s)", command, what, args[0], args[1], example)
	case len(args) > 0:
		return usageErrf("%s: unexpected argument %q: the %s is --%s %s (%s)", command, args[0], what, flagName, *value, example)
	}
	return nil
}

// noArgs refuses arguments a command that takes only flags was given.
func noArgs(name string, args []string) error {
	if len(args) > 0 {
		return usageErrf("%s: unexpected argument %q: it takes flags only (see gpuwatch %s --help)", name, args[0], name)
	}
	return nil
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErrf("--log-level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
