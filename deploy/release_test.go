package deploy

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxGLIBC is the newest glibc symbol version a release binary may need
// (scripts/release builds against Debian 11 and checks the same).
const maxGLIBC = "2.17"

// dist returns the folder scripts/release made, from GPUWATCH_DIST; .ci/run
// builds a release first and sets it.
func dist(t *testing.T) string {
	t.Helper()
	d := os.Getenv("GPUWATCH_DIST")
	if d == "" {
		if requireTools() {
			t.Fatal("GPUWATCH_DIST is not set, and GPUWATCH_DEPLOY_TESTS=require: run scripts/release --out DIR first")
		}
		t.Skip("no release to check: scripts/release --out DIR, then GPUWATCH_DIST=DIR (.ci/run does)")
	}
	d, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestReleaseChecksums checks SHA256SUMS against the files it lists, and
// that it lists a tarball, a .deb and an .rpm for each architecture.
func TestReleaseChecksums(t *testing.T) {
	d := dist(t)
	sums, err := os.ReadFile(filepath.Join(d, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: %q is not SUM  NAME", line)
		}
		b, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
		names = append(names, name)
	}
	all := strings.Join(names, " ")
	for _, pattern := range []string{`_linux_amd64\.tar\.gz`, `_linux_arm64\.tar\.gz`, `_amd64\.deb`, `_arm64\.deb`, `\.x86_64\.rpm`, `\.aarch64\.rpm`,
		`_linux_amd64\.image\.tar`, `_linux_arm64\.image\.tar`} {
		if !regexp.MustCompile(pattern).MatchString(all) {
			t.Errorf("SHA256SUMS lists %s, want a file matching %s", all, pattern)
		}
	}
}

// artifact returns the one file of the release matching a glob.
func artifact(t *testing.T, glob string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dist(t), glob))
	if err != nil || len(m) != 1 {
		t.Fatalf("release: %v files match %s, want one", m, glob)
	}
	return m[0]
}

// unpackDeb unpacks a .deb with dpkg-deb: its files and its control files.
func unpackDeb(t *testing.T, deb string) (root, control string) {
	t.Helper()
	dpkg := need(t, "dpkg-deb", "apt-get install dpkg")
	root, control = t.TempDir(), t.TempDir()
	if got := run(t, "", nil, dpkg, "--extract", deb, root); got.code != 0 {
		t.Fatalf("dpkg-deb --extract: %s", got.stderr)
	}
	if got := run(t, "", nil, dpkg, "--control", deb, control); got.code != 0 {
		t.Fatalf("dpkg-deb --control: %s", got.stderr)
	}
	return root, control
}

// TestReleaseDeb unpacks the amd64 .deb, as `apt install ./gpuwatch_*.deb`
// would install it, and runs what it installed: the binary runs the demo
// and checks the packaged config, the unit passes systemd-analyze verify
// with the package's paths, and the files are the repository's.
func TestReleaseDeb(t *testing.T) {
	root, control := unpackDeb(t, artifact(t, "gpuwatch_*_amd64.deb"))
	bin := filepath.Join(root, binaryPath)
	for file, from := range map[string]string{
		configPath: filepath.Join(repo, "config.example.yaml"),
		unitPath:   unitFile,
	} {
		got, err := os.ReadFile(filepath.Join(root, file))
		want, _ := os.ReadFile(from)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("the .deb's %s is not %s (%v)", file, from, err)
		}
	}
	if conffiles, err := os.ReadFile(filepath.Join(control, "conffiles")); err != nil || strings.TrimSpace(string(conffiles)) != configPath {
		t.Errorf("the .deb's conffiles: %q (%v), want %s", conffiles, err, configPath)
	}
	if preinst, err := os.ReadFile(filepath.Join(control, "preinst")); err != nil || !strings.Contains(string(preinst), "useradd --system") {
		t.Errorf("the .deb's preinst makes no gpuwatch system user (%v)", err)
	}

	if got := run(t, "", nil, bin, "version"); got.code != 0 || !regexp.MustCompile(`^gpuwatch v\S+ \(commit [0-9a-f]{12}, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\n$`).MatchString(got.stdout) {
		t.Errorf("gpuwatch version: exit %d %q, want the version, commit and date scripts/release stamped", got.code, got.stdout)
	}
	if got := run(t, "", []string{"SLACK_WEBHOOK_URL=", "SLACK_BOT_TOKEN="}, bin, "demo", "--speed", "0"); got.code != 0 || !strings.Contains(got.stdout, "\ndemo finished: ") {
		t.Errorf("gpuwatch demo --speed 0: exit %d\n%s", got.code, got.stderr)
	}
	// The unit's own command before it starts: the packaged config as
	// installed, read where the unit reads it.
	if got := run(t, "", nil, bin, "check", "--config", filepath.Join(root, configPath)); got.code != 0 ||
		!strings.HasSuffix(strings.TrimSpace(got.stdout), "config.yaml: ok: 18 rules, 1 receiver, source nvml every 5s") {
		t.Errorf("gpuwatch check --config %s: exit %d\n%s%s", configPath, got.code, got.stdout, got.stderr)
	}
	unit := parseUnit(t, filepath.Join(root, unitPath))["Service"]
	for _, cmd := range append(unit["ExecStartPre"], unit["ExecStart"]...) {
		f := strings.Fields(cmd)
		if _, err := os.Stat(filepath.Join(root, f[0])); err != nil || f[len(f)-1] != configPath {
			t.Errorf("the unit runs %q, want the package's %s on %s", cmd, binaryPath, configPath)
		}
	}
	verifyUnit(t, unitRoot(t, filepath.Join(root, unitPath), bin))
}

// TestReleaseRPM reads the rpm packages with rpm: their digests, files,
// config files and scripts.
func TestReleaseRPM(t *testing.T) {
	rpm := need(t, "rpm", "apt-get install rpm")
	for _, arch := range []string{"x86_64", "aarch64"} {
		pkg := artifact(t, "gpuwatch-*."+arch+".rpm")
		if got := run(t, "", nil, rpm, "--checksig", "--nosignature", pkg); got.code != 0 {
			t.Errorf("rpm --checksig %s: %s%s", filepath.Base(pkg), got.stdout, got.stderr)
		}
		files := run(t, "", nil, rpm, "-qpl", pkg).stdout
		for _, f := range []string{binaryPath, configPath, unitPath} {
			if !strings.Contains(files, f+"\n") {
				t.Errorf("%s holds no %s:\n%s", filepath.Base(pkg), f, files)
			}
		}
		if got := run(t, "", nil, rpm, "-qp", "--configfiles", pkg).stdout; strings.TrimSpace(got) != configPath {
			t.Errorf("%s: config files %q, want %s", filepath.Base(pkg), got, configPath)
		}
		if got := run(t, "", nil, rpm, "-qp", "--queryformat", "%{ARCH}", pkg).stdout; got != arch {
			t.Errorf("%s: arch %q, want %s", filepath.Base(pkg), got, arch)
		}
		if got := run(t, "", nil, rpm, "-qp", "--scripts", pkg).stdout; !strings.Contains(got, "useradd --system") {
			t.Errorf("%s: its scripts make no gpuwatch system user:\n%s", filepath.Base(pkg), got)
		}
	}
}

// TestReleaseGLIBC reads the glibc symbol versions each binary needs: none
// newer than maxGLIBC, so they run on RHEL 8 (glibc 2.28), Ubuntu 20.04
// (2.31) and every distribution since glibc 2.17. The arm64 binary runs
// its version and the demo under qemu where qemu-aarch64 is installed.
func TestReleaseGLIBC(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		root, _ := unpackDeb(t, artifact(t, "gpuwatch_*_"+arch+".deb"))
		bin := filepath.Join(root, binaryPath)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.DynamicSymbols()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		newest := "2.0"
		for _, s := range syms {
			if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && versionLess(newest, v) {
				newest = v
			}
		}
		if versionLess(maxGLIBC, newest) {
			t.Errorf("linux/%s needs glibc %s, newer than %s", arch, newest, maxGLIBC)
		}
		t.Logf("linux/%s needs glibc %s or newer", arch, newest)
		if arch != "arm64" {
			continue
		}
		qemu := need(t, "qemu-aarch64", "apt-get install qemu-user gcc-aarch64-linux-gnu")
		env := []string{"QEMU_LD_PREFIX=/usr/aarch64-linux-gnu"}
		if got := run(t, "", env, qemu, bin, "version"); got.code != 0 || !strings.HasPrefix(got.stdout, "gpuwatch v") {
			t.Errorf("qemu-aarch64 gpuwatch version: exit %d %q %s", got.code, got.stdout, got.stderr)
		}
		if got := run(t, "", append(env, "SLACK_WEBHOOK_URL=", "SLACK_BOT_TOKEN="), qemu, bin, "demo", "--speed", "0", "--scenario", "thermal"); got.code != 0 || !strings.Contains(got.stdout, "demo finished: ") {
			t.Errorf("qemu-aarch64 gpuwatch demo: exit %d\n%s", got.code, got.stderr)
		}
	}
}

// versionLess compares dotted version numbers: 2.3.3 < 2.17.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// TestReleaseLicense: the tarball ships LICENSE, the .deb Debian's
// machine-readable copyright file naming Apache-2.0, the .rpm its License
// tag and the license's text.
func TestReleaseLicense(t *testing.T) {
	license := readRepo(t, "LICENSE")
	if !bytes.Contains(license, []byte("Apache License")) || !bytes.Contains(license, []byte("Version 2.0, January 2004")) {
		t.Fatal("LICENSE is not the Apache License 2.0")
	}
	dir := t.TempDir()
	if got := run(t, "", nil, "tar", "-xzf", artifact(t, "gpuwatch_*_linux_amd64.tar.gz"), "-C", dir, "--strip-components=1"); got.code != 0 {
		t.Fatal(got.stderr)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "LICENSE")); err != nil || !bytes.Equal(got, license) {
		t.Errorf("the tarball's LICENSE is not the repository's (%v)", err)
	}
	root, control := unpackDeb(t, artifact(t, "gpuwatch_*_amd64.deb"))
	copyright, err := os.ReadFile(filepath.Join(root, "usr/share/doc/gpuwatch/copyright"))
	if err != nil || !bytes.HasPrefix(copyright, []byte("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")) ||
		!bytes.Contains(copyright, []byte("\nLicense: Apache-2.0\n")) || !bytes.Contains(copyright, []byte("/usr/share/common-licenses/Apache-2.0")) {
		t.Errorf("the .deb's /usr/share/doc/gpuwatch/copyright (%v):\n%s\nwant the machine-readable format naming Apache-2.0", err, copyright)
	}
	if c, _ := os.ReadFile(filepath.Join(control, "control")); !strings.Contains(string(c), "\nDepends: libc6 (>= 2.17), passwd\n") {
		t.Errorf("the .deb's control:\n%s\nwant it to depend on libc6 (>= 2.17) and passwd (useradd)", c)
	}
	rpm := need(t, "rpm", "apt-get install rpm")
	pkg := artifact(t, "gpuwatch-*.x86_64.rpm")
	if got := run(t, "", nil, rpm, "-qp", "--queryformat", "%{LICENSE}", pkg).stdout; got != "Apache-2.0" {
		t.Errorf("the .rpm's License: %q, want Apache-2.0", got)
	}
	if got := run(t, "", nil, rpm, "-qpL", pkg).stdout; strings.TrimSpace(got) != "/usr/share/licenses/gpuwatch/LICENSE" {
		t.Errorf("the .rpm's license files: %q, want /usr/share/licenses/gpuwatch/LICENSE", got)
	}
}

// TestReleaseRPMPayload: the .rpm's payload unpacks where it is unpacked
// (rpm2cpio | cpio -idm writes ./usr/bin/gpuwatch, not /usr/bin/gpuwatch),
// its files have the commit's time, not 1970's, and the package requires
// what its scripts run.
func TestReleaseRPMPayload(t *testing.T) {
	rpm := need(t, "rpm", "apt-get install rpm")
	need(t, "rpm2cpio", "apt-get install rpm2cpio")
	need(t, "cpio", "apt-get install cpio")
	for _, arch := range []string{"x86_64", "aarch64"} {
		pkg := artifact(t, "gpuwatch-*."+arch+".rpm")
		got := run(t, "", nil, "sh", "-c", `rpm2cpio "$1" | cpio -itv --quiet`, "-", pkg)
		if got.code != 0 {
			t.Fatalf("rpm2cpio | cpio -itv: %s", got.stderr)
		}
		for line := range strings.Lines(strings.TrimSpace(got.stdout)) {
			f := strings.Fields(line)
			if name := f[len(f)-1]; !strings.HasPrefix(name, "./") {
				t.Errorf("%s: the payload names %s, which cpio would write outside the folder it unpacks into", filepath.Base(pkg), name)
			}
			if strings.Contains(line, " 1970 ") {
				t.Errorf("%s: a file of 1970: %s", filepath.Base(pkg), line)
			}
		}
		requires := run(t, "", nil, rpm, "-qpR", pkg).stdout
		for _, want := range []string{"/usr/sbin/useradd", "/usr/sbin/groupadd", "/usr/bin/getent", "glibc >= 2.17"} {
			if !strings.Contains(requires, want+"\n") {
				t.Errorf("%s requires\n%s\nwant %s", filepath.Base(pkg), requires, want)
			}
		}
	}
}

// TestReleaseLintian runs Debian's lintian on the .deb packages: no error
// and no warning, but for the findings deploy/packages/lintian-overrides
// (shipped in the package) justifies.
func TestReleaseLintian(t *testing.T) {
	lintian := need(t, "lintian", "apt-get install lintian")
	for _, arch := range []string{"amd64", "arm64"} {
		pkg := artifact(t, "gpuwatch_*_"+arch+".deb")
		if got := runWithin(t, 10*time.Minute, "", nil, lintian, "--fail-on", "error,warning", "--tag-display-limit", "0", pkg); got.code != 0 {
			t.Errorf("lintian %s: exit %d\n%s%s", filepath.Base(pkg), got.code, got.stdout, got.stderr)
		}
	}
}

// TestReleaseRpmlint runs rpmlint on the .rpm packages: no error and no
// warning, but for those deploy/packages/rpmlint.toml justifies.
func TestReleaseRpmlint(t *testing.T) {
	rpmlint := need(t, "rpmlint", "apt-get install rpmlint")
	for _, arch := range []string{"x86_64", "aarch64"} {
		pkg := artifact(t, "gpuwatch-*."+arch+".rpm")
		got := runWithin(t, 10*time.Minute, "", nil, rpmlint, "-c", filepath.Join(repo, "deploy/packages/rpmlint.toml"), pkg)
		if got.code != 0 || !strings.Contains(got.stdout, " 0 errors, 0 warnings") {
			t.Errorf("rpmlint %s: exit %d\n%s%s", filepath.Base(pkg), got.code, got.stdout, got.stderr)
		}
	}
}
