package cli

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/strictyaml"
	"github.com/gpuwatch/gpuwatch/rules"
)

func testCommand(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "test", "FILE...", `
Runs rule unit tests: YAML files that feed rules with input series, or with
a GPU log (log: FILE, any log replay reads), and say which alerts must be
firing when (see docs/rules.md). Prints each failure and exits 1 if any
test fails.`)
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErrf("test: name at least one test file: gpuwatch test rules_test.yaml")
	}
	var passed, failed, broken int
	var unread []string // test files that could not be read
	for _, path := range args {
		results, err := rules.RunTestFile(path)
		for _, p := range strictyaml.AsErrors(err) {
			if pe := (*iofs.PathError)(nil); errors.As(p, &pe) && pe.Path == path {
				unread = append(unread, p.Error())
				continue
			}
			fmt.Fprintln(env.Stderr, p)
			broken++
		}
		for _, r := range results {
			if len(r.Failures) == 0 {
				passed++
				fmt.Fprintf(env.Stdout, "PASS %s: %s\n", r.File, r.Name)
				continue
			}
			failed++
			fmt.Fprintf(env.Stdout, "FAIL %s: %s\n", r.File, r.Name)
			for _, f := range r.Failures {
				fmt.Fprintf(env.Stdout, "    %s\n", f)
			}
		}
	}
	fmt.Fprintf(env.Stdout, "%d passed, %d failed\n", passed, failed)
	switch {
	case len(unread) > 0:
		return fmt.Errorf("test: %w", errors.New(strings.Join(unread, "; ")))
	case broken == 1:
		return userErrf("test: a problem in the test files (printed above)")
	case broken > 1:
		return userErrf("test: %d problems in the test files (printed above)", broken)
	case failed > 0:
		return userErrf("test: %d of %d tests failed", failed, passed+failed)
	}
	return nil
}
