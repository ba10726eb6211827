package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const unitFile = "systemd/gpuwatch.service"

// unit is a systemd unit file: each key's values, in order, per section.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, section := unit{}, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q is not KEY=VALUE in a section", path, n, line)
			}
			u[section][key] = append(u[section][key], value)
		}
	}
	return u
}

// unitRoot makes a root folder for systemd-analyze --root: the system's
// own units (targets the unit refers to), the unit as the packages install
// it, and the programs it runs.
func unitRoot(t *testing.T, unitPath, gpuwatchBin string) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			copyTree(t, dir, filepath.Join(root, "usr/lib/systemd/system"))
			break
		}
	}
	copyFile(t, unitPath, filepath.Join(root, "usr/lib/systemd/system/gpuwatch.service"))
	copyFile(t, gpuwatchBin, filepath.Join(root, "usr/bin/gpuwatch"))
	kill, err := exec.LookPath("kill")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, kill, filepath.Join(root, "bin/kill"))
	return root
}

// verifyUnit runs systemd-analyze verify on the unit as installed in
// root; any message is a failure (it exits 0 on unknown keys and bad
// values, which it only warns about).
func verifyUnit(t *testing.T, root string) {
	t.Helper()
	analyze := need(t, "systemd-analyze", "apt-get install systemd")
	got := run(t, "", []string{"SYSTEMD_LOG_COLOR=0"}, analyze, "verify", "--root="+root, "gpuwatch.service")
	if strings.Contains(got.stderr, "Failed to initialize") || strings.Contains(got.stderr, "System has not been booted") {
		t.Skipf("systemd-analyze verify cannot run here: %s", got.stderr)
	}
	if got.code != 0 || strings.TrimSpace(got.stdout+got.stderr) != "" {
		t.Errorf("systemd-analyze verify gpuwatch.service: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
}

func TestSystemdUnitVerifies(t *testing.T) {
	verifyUnit(t, unitRoot(t, unitFile, gpuwatch(t)))
}

// TestSystemdUnitExposure holds the unit to what systemd-analyze security
// says of its sandbox: "OK" (at most 3.0 of 10) today, 2.3.
func TestSystemdUnitExposure(t *testing.T) {
	analyze := need(t, "systemd-analyze", "apt-get install systemd")
	root := unitRoot(t, unitFile, gpuwatch(t))
	got := run(t, "", []string{"SYSTEMD_LOG_COLOR=0", "SYSTEMD_COLORS=0"}, analyze, "security", "--offline=yes", "--root="+root, "--threshold=30", "--no-pager", "gpuwatch.service")
	if got.code != 0 {
		t.Errorf("systemd-analyze security: exit %d, want the exposure at most 3.0\n%s%s", got.code, got.stdout, got.stderr)
	}
}

// The paths the unit and the packages share.
const (
	binaryPath = "/usr/bin/gpuwatch"
	configPath = "/etc/gpuwatch/config.yaml"
	unitPath   = "/usr/lib/systemd/system/gpuwatch.service"
)

// TestSystemdUnitSettings checks what the README and the packages promise
// of the unit, and that it runs the binary and the config the packages
// install.
func TestSystemdUnitSettings(t *testing.T) {
	s := parseUnit(t, unitFile)["Service"]
	want := map[string]string{
		"User":                  "gpuwatch",
		"ExecStartPre":          binaryPath + " check --config " + configPath,
		"ExecStart":             binaryPath + " run --config " + configPath,
		"ExecReload":            "/bin/kill -HUP $MAINPID",
		"Restart":               "on-failure",
		"StateDirectory":        "gpuwatch",
		"ProtectSystem":         "strict",
		"NoNewPrivileges":       "yes",
		"CapabilityBoundingSet": "CAP_SYS_PTRACE",
		"AmbientCapabilities":   "CAP_SYS_PTRACE",
		"DevicePolicy":          "closed",
		"DeviceAllow":           "char-nvidia* rw",
		"ProtectProc":           "default",
	}
	for key, value := range want {
		if got := s[key]; !slices.Equal(got, []string{value}) {
			t.Errorf("%s: %s=%q, want %q", unitFile, key, got, value)
		}
	}
	if got := s["PrivateDevices"]; len(got) > 0 && got[0] != "no" {
		t.Errorf("%s: PrivateDevices=%s would hide /dev/nvidia*", unitFile, got[0])
	}
	installed := packageContents(t)
	for _, path := range []string{binaryPath, configPath, unitPath} {
		if _, ok := installed[path]; !ok {
			t.Errorf("packages/nfpm.yaml installs no %s", path)
		}
	}
}

// packageContents is what nfpm.yaml puts in the packages: each
// destination and its source.
func packageContents(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("packages/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Contents []struct{ Src, Dst, Type string }
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cfg.Contents {
		out[c.Dst] = c.Src
	}
	return out
}
