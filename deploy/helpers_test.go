package deploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// repo is the repository's root, the folder above this module.
const repo = ".."

// requireTools is what GPUWATCH_DEPLOY_TESTS says: "require" (CI) turns a
// missing tool from a skip into a failure.
func requireTools() bool { return os.Getenv("GPUWATCH_DEPLOY_TESTS") == "require" }

// need returns the path of a program the test needs, skipping (or, in CI,
// failing) with how to install it when it is missing.
func need(t *testing.T, program, install string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	if requireTools() {
		t.Fatalf("%s is not installed (%s), and GPUWATCH_DEPLOY_TESTS=require", program, install)
	}
	t.Skipf("%s is not installed: %s (.ci/run does)", program, install)
	return ""
}

var build struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

// gpuwatch returns a gpuwatch binary built from the repository, once for
// the test binary's run.
func gpuwatch(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "gpuwatch-deploy-test-")
		if err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(dir, "gpuwatch")
		cmd := exec.Command("go", "build", "-o", build.bin, "./cmd/gpuwatch")
		cmd.Dir = repo
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build ./cmd/gpuwatch: %v\n%s", build.err, build.out)
	}
	return build.bin
}

// result is what one run of a program left.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a program with a two minutes' limit in dir ("" for this
// folder), with env added to this process's environment.
func run(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	return runWithin(t, 2*time.Minute, dir, env, name, args...)
}

// runWithin is run with another limit, for the slow (a linter reading a
// whole package).
func runWithin(t *testing.T, limit time.Duration, dir string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return r
}

// copyFile copies a file, keeping its mode.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the regular files under from to to.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		copyFile(t, path, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
