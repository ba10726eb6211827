package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// instruction is one instruction of a Dockerfile, continuation lines
// joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, …
	args string
}

// stage is a build stage: its FROM and what follows it.
type stage struct {
	from, name string
	body       []instruction
}

func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if l, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(l + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		cur.Reset()
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && in.cmd == "ARG":
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
		default:
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// TestDockerfile checks the image the README describes: built in a stage
// of its own, run from a small glibc image as a user, under the NVIDIA
// container toolkit with the utility capability, config and state volumes.
func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, filepath.Join(repo, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.from, "golang:") || build.name == "" {
		t.Errorf("Dockerfile: the build stage is FROM %s AS %q, want a named golang stage", build.from, build.name)
	}
	if final.from != "debian:bookworm-slim" && !strings.HasPrefix(final.from, "gcr.io/distroless/cc") {
		t.Errorf("Dockerfile: the image is FROM %s, want a small image with glibc", final.from)
	}
	var script strings.Builder
	for _, in := range build.all("RUN") {
		script.WriteString(in.args + "\n")
	}
	for _, v := range []string{"Version", "Commit", "Date"} {
		if !strings.Contains(script.String(), "-X github.com/gpuwatch/gpuwatch/cli."+v+"=") {
			t.Errorf("Dockerfile: the build sets no cli.%s with -ldflags -X", v)
		}
	}
	if !strings.Contains(script.String(), "CGO_ENABLED=1") {
		t.Errorf("Dockerfile: the build does not enable cgo, which go-nvml needs")
	}
	env := map[string]string{}
	for _, in := range final.all("ENV") {
		for _, kv := range strings.Fields(in.args) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
	}
	for k, v := range map[string]string{"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"} {
		if env[k] != v {
			t.Errorf("Dockerfile: ENV %s=%q, want %q", k, env[k], v)
		}
	}
	var volumes []string
	for _, in := range final.all("VOLUME") {
		volumes = append(volumes, strings.FieldsFunc(in.args, func(r rune) bool { return strings.ContainsRune(`[]", `, r) })...)
	}
	for _, v := range []string{"/etc/gpuwatch", "/var/lib/gpuwatch"} {
		if !slices.Contains(volumes, v) {
			t.Errorf("Dockerfile: volumes %v, want %s", volumes, v)
		}
	}
	users := final.all("USER")
	if len(users) == 0 || users[len(users)-1].args == "root" || users[len(users)-1].args == "0" {
		t.Errorf("Dockerfile: the image runs as root, want an unprivileged user")
	}
	entry := final.all("ENTRYPOINT")
	if len(entry) != 1 || !strings.Contains(entry[0].args, `"/usr/bin/gpuwatch"`) {
		t.Errorf("Dockerfile: ENTRYPOINT %v, want /usr/bin/gpuwatch", entry)
	}
	for _, in := range final.all("COPY") {
		if !strings.Contains(in.args, "--from="+build.name) {
			t.Errorf("Dockerfile:%d: COPY %s: the image takes files from the build stage only", in.line, in.args)
		}
	}
	// The build stage's sources are in the build context.
	ignored := dockerignore(t)
	for _, in := range build.all("COPY") {
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			if src != "." && ignored(src) {
				t.Errorf("Dockerfile:%d: COPY %s, which .dockerignore leaves out", in.line, src)
			}
		}
	}
}

// dockerignore returns whether .dockerignore leaves a path of the build
// context out, for the patterns it uses: globs, and **/ for any folder.
func dockerignore(t *testing.T) func(path string) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore: %q: exceptions are not understood by this test", line)
		}
		patterns = append(patterns, strings.TrimPrefix(line, "/"))
	}
	match := func(pattern, path string) bool {
		if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
			segs := strings.Split(path, "/")
			for i := range segs {
				if ok, _ := filepath.Match(rest, strings.Join(segs[i:], "/")); ok {
					return true
				}
			}
			return false
		}
		ok, _ := filepath.Match(pattern, path)
		return ok
	}
	return func(path string) bool {
		// A path is left out when it, or a folder above it, matches.
		for p := filepath.Clean(path); p != "." && p != "/"; p = filepath.Dir(p) {
			for _, pat := range patterns {
				if match(pat, p) {
					return true
				}
			}
		}
		return false
	}
}

// TestDockerBuildContext builds gpuwatch, as the Dockerfile does, from the
// files that .dockerignore lets into the build context, with no network:
// a file the build needs left out fails here, not in docker build.
func TestDockerBuildContext(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the build context and builds gpuwatch from it")
	}
	git := need(t, "git", "apt-get install git")
	files := run(t, repo, nil, git, "ls-files", "--cached", "--others", "--exclude-standard")
	if files.code != 0 {
		t.Skipf("not a git checkout: %s", files.stderr)
	}
	ignored := dockerignore(t)
	context := t.TempDir()
	n := 0
	for _, f := range strings.Split(strings.TrimSpace(files.stdout), "\n") {
		if fi, err := os.Lstat(filepath.Join(repo, f)); err != nil || !fi.Mode().IsRegular() || ignored(f) {
			continue
		}
		copyFile(t, filepath.Join(repo, f), filepath.Join(context, f))
		n++
	}
	bin := filepath.Join(t.TempDir(), "gpuwatch")
	// A cold, trimmed build compiles the standard library and go-nvml's C
	// code afresh: minutes of CPU on a busy machine.
	got := runWithin(t, 10*time.Minute, context, []string{"GOFLAGS=-mod=readonly", "GOPROXY=off", "CGO_ENABLED=1"},
		"go", "build", "-trimpath", "-buildvcs=false", "-o", bin, "./cmd/gpuwatch")
	if got.code != 0 {
		t.Fatalf("go build in the build context (%d files): exit %d\n%s", n, got.code, got.stderr)
	}
	if got := run(t, context, nil, bin, "check", "--config", "config.example.yaml"); got.code != 0 {
		t.Errorf("gpuwatch check --config config.example.yaml in the build context: exit %d\n%s", got.code, got.stderr)
	}
	for _, f := range []string{".git", "dist", "cli/testdata/traces/memory-leak.csv"} {
		if _, err := os.Stat(filepath.Join(context, f)); err == nil {
			t.Errorf("the build context holds %s", f)
		}
	}
}

// TestDockerfileLint runs dockerfilelint, a Dockerfile linter from npm
// (hadolint is not packaged where CI installs from).
func TestDockerfileLint(t *testing.T) {
	lint := need(t, "dockerfilelint", "npm install -g dockerfilelint@1.8.0")
	got := run(t, repo, nil, lint, "Dockerfile")
	if got.code != 0 {
		t.Errorf("dockerfilelint Dockerfile: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
}
