package cli_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The docs' shell recipes run as written: TestRecipes feeds every fenced
// sh block of README.md, of the pages of docs/ and of the scripts'
// READMEs, a command at a time, to one bash (the shell people type them
// in) in a copy of the checkout, in the order a reader meets them: a
// block's state (a built binary, a config, a daemon started in the
// background, a variable exported) is there for the next, as in a
// reader's terminal. The shell runs in namespaces of its own: its own
// network, where 127.0.0.1:9477 is free whoever else runs gpuwatch on the
// machine; its own processes, so that pidof finds its own gpuwatch; its
// own /tmp. recipeLines says how the commands that do not simply run and
// succeed are taken: what cannot run here (a package manager, Docker, a
// cluster, the test suite itself) is skipped with the reason, what runs
// otherwise than written says what differs and why. recipeSteps are what
// the prose between the blocks has a reader do (adapt the config, start
// the daemon on simulated GPUs, wait for a sample, stop it).
// TestDocsCommands checks what each command prints; this test checks that
// the recipes, taken in turn, work.

// recipeLine is how the test takes a command of a recipe that does not
// simply run and exit 0.
type recipeLine struct {
	// skip says why the command does not run here.
	skip string
	// as is the command as the test runs it, and why says what differs
	// from the page and why.
	as, why string
	// exit is the exit code the docs give the command here (no GPU, no
	// NVIDIA driver).
	exit int
	// input is what the reader types for the command (a password).
	input string
	// check checks what the command printed (standard output and error).
	check func(t *testing.T, r *recipeRun, out string)
}

// recipeLines are the commands of the recipes that do not simply run and
// exit 0, by their text on the page.
func recipeLines() map[string]recipeLine {
	suite := "the test suite, which runs this test"
	withoutGPU := func(exit int) func(t *testing.T, r *recipeRun, out string) {
		return func(t *testing.T, r *recipeRun, out string) {
			if !strings.Contains(out, "NVML library not found: is the NVIDIA driver installed?") {
				t.Errorf("without the NVIDIA driver: got\n%s\nwant it said, and exit %d", out, exit)
			}
		}
	}
	return map[string]recipeLine{
		"go run ./cmd/gpuwatch demo     # simulated GPUs, about a minute": {as: "go run ./cmd/gpuwatch demo --speed 0", why: "the same alerts at the same simulated times, unpaced: seconds, not a minute",
			check: func(t *testing.T, r *recipeRun, out string) {
				if !strings.Contains(out, "\ndemo finished: ") {
					t.Errorf("the demo did not finish:\n%s", out)
				}
			}},
		"go test ./...                  # the test suite, about two minutes on two cores":                 {skip: suite},
		"go test ./...                     # the tests a change needs, in about two minutes on two cores": {skip: suite},
		"go test -race ./...":                            {skip: suite},
		"go test -run '^$' -bench . ./...  # benchmarks": {skip: "the benchmarks: minutes of measuring, not a check"},
		".ci/run                           # what CI runs: gofmt, vet, demo, every test suite, race, the release and its tests": {skip: "CI, which runs this test"},
		`CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go run ./cmd/gpuwatch demo`:                                           {skip: "compiles go-nvml's C code afresh (minutes): the long suite's TestFirstBuild does (GPUWATCH_LONG_TESTS=1)"},
		`go env -w CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations"`:                                                            {skip: "changes the Go settings of whoever runs the tests"},
		"go test ./slackbot -run '^$' -bench BenchmarkStatus16GPUs -benchtime 5s":                                               {skip: "a benchmark: measuring, not a check"},
		"sudo apt install ./gpuwatch_*_amd64.deb    # Debian, Ubuntu: the package of a release":                                 {skip: "installs on this machine; deploy's TestReleaseDeb unpacks the .deb and runs what it installs"},
		"sudo dnf install ./gpuwatch-*.x86_64.rpm   # RHEL, Rocky, Fedora":                                                      {skip: "installs on this machine; deploy's TestReleaseRPM reads the .rpm"},
		"sudo apt install ./gpuwatch_*_amd64.deb    # or: sudo dnf install ./gpuwatch-*.x86_64.rpm":                             {skip: "installs on this machine; deploy's TestReleaseDeb and TestReleaseRPM check the packages"},
		"sudo systemctl enable --now gpuwatch":                                                                                  {skip: "needs systemd as PID 1; deploy's TestSystemdUnitVerifies checks the unit"},
		"SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… deploy/kubernetes/install   # Kubernetes: agents and a hub":              {skip: "needs a cluster; deploy's TestKubernetesManifests runs it with a kubectl that records its arguments"},
		"SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… deploy/kubernetes/install":                                               {skip: "needs a cluster; deploy's TestKubernetesManifests runs it with a kubectl that records its arguments"},
		"docker build -t gpuwatch .": {skip: "no Docker engine here; deploy's TestDockerBuildContext builds gpuwatch from the build context"},
		"docker run -d --name gpuwatch --gpus all --pid=host --network=host -v gpuwatch-state:/var/lib/gpuwatch gpuwatch": {skip: "no Docker engine nor GPU here; deploy's TestDockerfile checks the image's entry point"},
		"crane push dist/gpuwatch_1.2.3_linux_amd64.image.tar registry.example.net/gpuwatch:v1.2.3":                       {skip: "needs a registry; deploy's TestReleaseImage loads the image tarballs"},
		"cd deploy/kubernetes && kustomize edit set image gpuwatch=registry.example.net/gpuwatch:v1.2.3":                  {skip: "edits the checkout's kustomization; deploy's TestKubernetesManifests renders it"},
		"scripts/release --version v1.2.3":                                   {skip: "builds the release for both architectures, minutes; .ci/run runs it"},
		"./gpuwatch status                       # one look at the GPUs now": {exit: 3, check: withoutGPU(3)},
		"./gpuwatch run --config config.yaml     # the daemon":               {exit: 3, check: withoutGPU(3)},
		"gpuwatch <command> --help":                                          {skip: "a form: <command> stands for each command, which TestDocsCommands asks for its --help"},
		`curl -s --cacert /etc/gpuwatch/tls.crt -H "Authorization: Bearer $(cat /etc/gpuwatch/api-token)" https://gpu-server-1:9477/api/v1/alerts`: {
			skip: "a server named gpu-server-1 with TLS and a token; TestDocsCommands runs it against a daemon set up so"},
		"curl -s --cacert /etc/gpuwatch/tls.crt https://gpu-server-1:9477/api/v1/alerts": {skip: "a server named gpu-server-1 with TLS; TestDocsCommands runs it against a daemon set up so"},
		"gpuwatch silence expire 3f2a9c1b7e4d0a11": {exit: 1, check: func(t *testing.T, r *recipeRun, out string) {
			// The page's ID is an example: no silence has it.
			if !strings.Contains(out, "3f2a9c1b7e4d0a11") {
				t.Errorf("expiring a silence no one made: got %q, want it named", out)
			}
		}},
		"promtool test rules prom/rules_test.yaml": {skip: "promtool's unit tests of the exported rules, a minute of CPU: TestDocsCommands runs the command as written, on the files the same commands make"},
		"gpuwatch hash-password alice    # asks for alice's password twice, not shown": {input: "correct horse\n",
			check: func(t *testing.T, r *recipeRun, out string) {
				if !strings.HasPrefix(out, "alice: $2a$10$") {
					t.Errorf("hash-password: got %q, want the line for basic_auth_users", out)
				}
			}},
		"GPUWATCH_STORE=/tmp/owners.db SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… gpuwatch run --config examples/owners.yaml": {
			skip: "needs a Slack workspace; TestOwnersExample runs examples/owners.yaml as it is against a Slack fake"},
		"gpuwatch demo --scenario slurm-node --speed 0": {check: func(t *testing.T, r *recipeRun, out string) {
			if !strings.Contains(out, "\ndemo finished: ") || !strings.Contains(out, " (alice) pid ") {
				t.Errorf("the Slurm node's demo: want its alerts to name the jobs, \"job 4213 (alice)\"; got\n%s", out)
			}
		}},
		"mv /var/lib/gpuwatch/gpuwatch.db /var/lib/gpuwatch/gpuwatch.db.damaged": {skip: "moves the store of an installed gpuwatch; TestDocsCommands does it to a store of its own"},
		"wrk -t2 -c10 -d30s --latency -s scripts/loadtest/slash.lua http://127.0.0.1:9477 -- 200 10": {
			as: "wrk -t2 -c10 -d3s --latency -s scripts/loadtest/slash.lua http://127.0.0.1:9477 -- 200 10", why: "a short run: a check that every signed request is answered, not a measure",
			check: func(t *testing.T, r *recipeRun, out string) {
				if !strings.Contains(out, "slash.lua: ") || !strings.Contains(out, " requests, 0 not 200") {
					t.Errorf("the load test: want every request answered 200, the README's \"0 not 200\"; wrk printed\n%s", out)
				}
			}},
	}
}

// recipeStep is what the prose after a command has a reader do.
type recipeStep struct {
	// after is the command the step follows, as on the page.
	after string
	// says is what the page says the reader does: the test checks the
	// page still says it.
	says string
	do   func(t *testing.T, r *recipeRun)
}

// recipeSteps are the steps the prose between the recipes has a reader
// take, in the order of the pages.
func recipeSteps() []recipeStep {
	return []recipeStep{
		{after: "cp config.example.yaml config.yaml      # adapt the rules, then:", says: "adapt the rules, then:",
			do: func(t *testing.T, r *recipeRun) {
				// The state stays in the recipes' folder.
				r.edit(t, "config.yaml", "# path: /var/lib/gpuwatch/gpuwatch.db", "path: "+recipeRoot+"/state/gpuwatch.db")
			}},
		{after: "./gpuwatch run --config config.yaml     # the daemon", says: "Without a GPU, try the daemon on simulated GPUs with `type: sim` under\n`source:`",
			do: func(t *testing.T, r *recipeRun) {
				r.edit(t, "config.yaml", "  type: nvml", "  type: sim")
				r.run(t, "./gpuwatch run --config config.yaml > gpuwatch.log 2>&1 &")
				r.waitSample(t)
			}},
		{after: "gpuwatch digest --trace cron.log", says: "",
			do: func(t *testing.T, r *recipeRun) {
				// The pages are read; the load test wants the port.
				r.run(t, "kill %1 && wait")
			}},
		{after: "./gpuwatch run --config /tmp/gpuwatch-load.yaml > /dev/null &", says: "Wait a few seconds for the first sample",
			do: func(t *testing.T, r *recipeRun) { r.waitSample(t) }},
		{after: "wrk -t2 -c10 -d30s --latency -s scripts/loadtest/slash.lua http://127.0.0.1:9477 -- 200 10", says: "Stop gpuwatch: `kill %1`",
			do: func(t *testing.T, r *recipeRun) { r.run(t, "kill %1 && wait") }},
	}
}

// recipeRoot is where the copy of the checkout is seen from the shell,
// in its own mounts.
const recipeRoot = "/mnt"

// recipeRun is the shell the recipes run in.
type recipeRun struct {
	dir    string // the copy of the checkout, seen from outside as recipeRoot is from inside
	cmd    *exec.Cmd
	script io.WriteCloser // what the shell reads its commands from, fd 4
	stdin  io.WriteCloser // the commands' standard input: what the reader types
	status *bufio.Scanner // the exit code of each command, on fd 3
	out    lockedLines    // what the commands printed
	n      int
}

// TestRecipes runs every shell recipe of the README, docs/ and the
// scripts' READMEs as written.
func TestRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpuwatch and runs the recipes of the docs with it")
	}
	for _, prog := range []string{"bash", "unshare", "ip", "curl", "git"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("the recipes run in bash, in namespaces of their own (unshare, ip), with curl and git: %v", err)
		}
	}
	if fi, err := os.Stat(recipeRoot); err != nil || !fi.IsDir() {
		t.Skipf("the recipes' folder is mounted at %s, which this machine lacks", recipeRoot)
	}
	if out, err := exec.Command("unshare", "-rnmpf", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("the recipes run in namespaces of their own, which this machine does not allow (unshare: %v %s)", err, out)
	}
	type block struct {
		page  string
		lines []string
	}
	var blocks []block
	pages := docsPages(t)
	scripts, _ := filepath.Glob("../scripts/*/README.md")
	for _, path := range append(pages, scripts...) {
		p := readPage(t, path)
		for _, b := range p.blocks {
			if b.lang == "sh" {
				blocks = append(blocks, block{p.name, recipeCommands(b.lines)})
			}
		}
	}
	lines, steps := recipeLines(), recipeSteps()
	var shown []string
	for _, b := range blocks {
		shown = append(shown, b.lines...)
	}
	for cmd := range lines {
		if !slices.Contains(shown, cmd) {
			t.Errorf("recipeLines has %q, which no recipe shows any more: remove it", cmd)
		}
	}
	all := readREADME(t)
	for _, s := range steps {
		if !slices.Contains(shown, s.after) {
			t.Errorf("recipeSteps follows %q, which no recipe shows any more", s.after)
		}
		if s.says != "" && !pagesSay(t, all, scripts, s.says) {
			t.Errorf("recipeSteps takes the step %q, which no page says any more", s.says)
		}
	}
	if t.Failed() {
		return
	}
	_, wrkErr := exec.LookPath("wrk")

	r := startRecipes(t)
	for _, b := range blocks {
		for _, cmd := range b.lines {
			line := lines[cmd]
			name := b.page + ": " + cmd
			switch {
			case line.skip != "":
				t.Logf("%s: not run: %s", name, line.skip)
			case strings.HasPrefix(cmd, "wrk ") && wrkErr != nil:
				t.Logf("%s: not run: wrk is not installed (apt-get install wrk)", name)
			default:
				as := cmd
				if line.as != "" {
					as = line.as
					t.Logf("%s: run as %q: %s", name, as, line.why)
				}
				began := time.Now()
				if line.input != "" {
					io.WriteString(r.stdin, line.input)
				}
				code, out := r.run(t, as)
				if d := time.Since(began); d > 2*time.Second {
					t.Logf("%s: %v", name, d.Round(100*time.Millisecond))
				}
				if code != line.exit {
					t.Errorf("%s: exit %d, want %d\n%s", name, code, line.exit, out)
				} else if line.check != nil {
					line.check(t, r, out)
				}
			}
			for _, s := range steps {
				if s.after == cmd && s.do != nil {
					s.do(t, r)
				}
			}
			if t.Failed() {
				t.Fatalf("the recipes stop at %s; what the shell printed:\n%s", name, &r.out)
			}
		}
	}
}

// pagesSay reports whether a page (or a script's README) has text, its
// white space as on the page or as one space.
func pagesSay(t *testing.T, all *readme, scripts []string, text string) bool {
	flat := strings.Join(strings.Fields(text), " ")
	for _, p := range all.pages {
		if strings.Contains(p.text, text) || strings.Contains(strings.Join(strings.Fields(p.text), " "), flat) {
			return true
		}
	}
	for _, path := range scripts {
		p := readPage(t, path)
		if strings.Contains(strings.Join(strings.Fields(p.text), " "), flat) {
			return true
		}
	}
	return false
}

// recipeCommands are a block's commands as the shell reads them: a line
// each, a here-document with the lines it takes, comments and blank lines
// left out; the block's indent (a list item's) taken off.
func recipeCommands(block []string) []string {
	indent := -1
	for _, l := range block {
		if strings.TrimSpace(l) != "" {
			n := len(l) - len(strings.TrimLeft(l, " "))
			if indent < 0 || n < indent {
				indent = n
			}
		}
	}
	var out []string
	for i := 0; i < len(block); i++ {
		l := block[i][min(len(block[i]), max(indent, 0)):]
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cmd := strings.TrimRight(l, " ")
		if _, word, ok := strings.Cut(cmd, "<<'"); ok {
			end, _, _ := strings.Cut(word, "'")
			for i++; i < len(block); i++ {
				body := block[i][min(len(block[i]), indent):]
				cmd += "\n" + body
				if body == end {
					break
				}
			}
		}
		out = append(out, cmd)
	}
	return out
}

// startRecipes copies the checkout (what git tracks and what it would
// add) to a folder, with a commit of its own (a recipe asks git for the
// commit), and starts the shell there, in namespaces of its own, with the
// folder first on its PATH: the docs' gpuwatch is the one its recipes
// build.
func startRecipes(t *testing.T) *recipeRun {
	t.Helper()
	r := &recipeRun{dir: t.TempDir()}
	files, err := exec.Command("git", "-C", "..", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("the recipes run in a copy of a git checkout: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		src := filepath.Join("..", name)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.name=recipes -c user.email=recipes@localhost commit -qm recipes")
	git.Dir = r.dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("commit the copy of the checkout: %v\n%s", err, out)
	}
	// gpu.csv is a log the reader keeps ("Already logging with
	// nvidia-smi?"); noheader.csv, cron.log and loop.csv the logs replay.md reads.
	for from, to := range map[string]string{gpuCSV: "gpu.csv", "../gpu/replay/testdata/logs/smi-noheader.csv": "noheader.csv", "../gpu/replay/testdata/logs/cron-30min.log": "cron.log", "../gpu/replay/testdata/logs/smi-untimed.csv": "loop.csv"} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		r.write(t, to, string(b))
	}
	// nvidia-smi, which this machine lacks, is played by a script that
	// prints gpu.csv, the log the README's command made on a GPU server.
	r.write(t, "bin/gpu-server.csv", r.file(t, "gpu.csv"))
	r.write(t, "bin/nvidia-smi", "#!/bin/sh\n# The log of a GPU server, as nvidia-smi wrote it there.\ncat "+recipeRoot+"/bin/gpu-server.csv\n")
	os.Chmod(filepath.Join(r.dir, "bin", "nvidia-smi"), 0o755)

	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	scriptR, scriptW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.script = scriptW
	shell := fmt.Sprintf(`mount --bind %q %s && mount -t tmpfs tmpfs /tmp && ip link set lo up && cd %s && PATH=%s:%s/bin:$PATH exec bash --noprofile --norc /dev/fd/4`,
		r.dir, recipeRoot, recipeRoot, recipeRoot, recipeRoot)
	r.cmd = exec.Command("unshare", "-rnmpf", "--mount-proc", "sh", "-c", shell)
	r.cmd.Env = append(os.Environ(), "TZ=UTC", "SLACK_WEBHOOK_URL=", "SLACK_BOT_TOKEN=")
	r.cmd.Stdout, r.cmd.Stderr = outW, outW
	r.cmd.ExtraFiles = []*os.File{statusW, scriptR}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	statusW.Close()
	outW.Close()
	scriptR.Close()
	var reading sync.WaitGroup
	reading.Go(func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			r.out.add(sc.Text())
		}
	})
	r.status = bufio.NewScanner(statusR)
	t.Cleanup(func() {
		// The shell and all it started, in its own process namespace, end
		// with it.
		r.script.Close()
		r.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- r.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		reading.Wait()
	})
	return r
}

// run sends cmd to the shell and returns its exit code and what it
// printed, failing the test when it takes more than five minutes.
func (r *recipeRun) run(t *testing.T, cmd string) (int, string) {
	t.Helper()
	r.n++
	before := len(r.out.snapshot())
	fmt.Fprintf(r.script, "%s\nprintf '%%d %%d\\n' %d $? >&3\n", cmd, r.n)
	type result struct {
		n, code int
		ok      bool
	}
	got := make(chan result, 1)
	go func() {
		var res result
		if r.status.Scan() {
			_, err := fmt.Sscanf(r.status.Text(), "%d %d", &res.n, &res.code)
			res.ok = err == nil
		}
		got <- res
	}()
	select {
	case res := <-got:
		if !res.ok || res.n != r.n {
			t.Fatalf("%s: the shell ended or lost its place (%+v); it printed:\n%s", cmd, res, &r.out)
		}
		time.Sleep(50 * time.Millisecond) // the last lines of output, on their own pipe
		return res.code, strings.Join(r.out.snapshot()[before:], "\n")
	case <-time.After(5 * time.Minute):
		t.Fatalf("%s: still running after five minutes; the shell printed:\n%s", cmd, &r.out)
	}
	return 0, ""
}

// waitSample waits until the daemon on 127.0.0.1:9477 has a sample of
// the GPUs, as a reader waits a few seconds.
func (r *recipeRun) waitSample(t *testing.T) {
	t.Helper()
	code, out := r.run(t, `for i in $(seq 600); do curl -s http://127.0.0.1:9477/api/v1/status | grep -q '"index"' && break; sleep 0.1; done; curl -s http://127.0.0.1:9477/api/v1/status | grep -q '"index"'`)
	if code != 0 {
		t.Fatalf("the daemon on 127.0.0.1:9477 has no sample of its GPUs within a minute:\n%s\n%s", out, r.file(t, "gpuwatch.log"))
	}
}

func (r *recipeRun) write(t *testing.T, name, text string) {
	t.Helper()
	path := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// file is a file of the recipes' folder, "" when there is none.
func (r *recipeRun) file(t *testing.T, name string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, name))
	return string(b)
}

// edit replaces old by new in a file of the recipes' folder.
func (r *recipeRun) edit(t *testing.T, name, old, new string) {
	t.Helper()
	text := r.file(t, name)
	if !strings.Contains(text, old) {
		t.Fatalf("%s does not hold %q", name, old)
	}
	r.write(t, name, strings.Replace(text, old, new, 1))
}

// snapshot is the lines so far.
func (l *lockedLines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}
