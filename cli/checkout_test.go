package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEFilesAreIgnored: every file the README and docs/ have a user
// make in the checkout (cp config.example.yaml config.yaml, a log with
// nvidia-smi > gpu.csv, a build with -o) is ignored by git, so that a
// binary built there afterwards does not say "with local changes" in
// gpuwatch version: Go stamps a build as modified when git status shows
// anything, untracked files included, and only tracked files are changes.
func TestREADMEFilesAreIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := ".."
	if err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	pages := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, docs...)
	made := map[string]string{} // path → the command that makes it
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range shellCommands(string(text)) {
			for _, path := range madeBy(cmd) {
				made[path] = cmd
			}
		}
	}
	if _, ok := made["config.yaml"]; !ok {
		t.Fatalf("found no command making config.yaml in %v: the commands are not read right", pages)
	}
	for path, cmd := range made {
		if err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", path).Run(); err != nil {
			t.Errorf("%s, made by `%s` as the docs say, is not in .gitignore: gpuwatch version would say \"with local changes\"", path, cmd)
		}
	}
}

// shellCommands returns the lines of the page's fenced sh blocks.
func shellCommands(page string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			in = !in && (trimmed == "```sh" || trimmed == "```bash" || trimmed == "```shell")
		case in && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			cmd, _, _ := strings.Cut(trimmed, " # ") // a comment after the command
			out = append(out, strings.TrimSpace(cmd))
		}
	}
	return out
}

// madeBy returns the files in the checkout a command makes: the target of
// cp, of a redirection, of -o and of --out, when it is a relative path.
func madeBy(cmd string) []string {
	var out []string
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`^cp\s+\S+\s+(\S+)$`),
		regexp.MustCompile(`(?:^|\s)>>?\s*(\S+)`), // a redirection, not the end of a <placeholder>
		regexp.MustCompile(`\s-o\s+(\S+)`),
		regexp.MustCompile(`\s--out\s+(\S+)`),
	} {
		for _, m := range re.FindAllStringSubmatch(cmd, -1) {
			if p := m[1]; !strings.ContainsAny(p[:1], "/~$&-<") && !strings.Contains(p, "://") {
				out = append(out, p)
			}
		}
	}
	return out
}
