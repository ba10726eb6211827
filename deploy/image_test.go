package deploy

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestReleaseImage loads each architecture's image tarball the way
// `crane push` does, without a container daemon, and checks what it runs:
// its config (entrypoint, command, user, platform, the NVIDIA toolkit's
// variables) and its files (the release's binary, the example config,
// the user gpuwatch and its state folder, ldconfig, the CA bundle, the
// time zones). It then runs the image's gpuwatch with the image's own C
// library: natively on amd64, under qemu on arm64.
func TestReleaseImage(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			path := artifact(t, "gpuwatch_*_linux_"+arch+".image.tar")
			img, err := tarball.ImageFromPath(path, nil)
			if err != nil {
				t.Fatalf("%s is not an image tarball: %v", filepath.Base(path), err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cfg.Config
			if cfg.OS != "linux" || cfg.Architecture != arch || !slices.Equal(c.Entrypoint, []string{"/usr/bin/gpuwatch"}) ||
				!slices.Equal(c.Cmd, []string{"run", "--config", "/etc/gpuwatch/config.yaml"}) || c.User != "10001:10001" ||
				!slices.Contains(c.Env, "NVIDIA_DRIVER_CAPABILITIES=utility") || !slices.Contains(c.Env, "NVIDIA_VISIBLE_DEVICES=all") {
				t.Errorf("config: %s/%s, entrypoint %q, cmd %q, user %q, env %q; want linux/%s, /usr/bin/gpuwatch run --config /etc/gpuwatch/config.yaml as 10001, for the NVIDIA toolkit",
					cfg.OS, cfg.Architecture, c.Entrypoint, c.Cmd, c.User, c.Env, arch)
			}
			if _, ok := c.ExposedPorts["9477/tcp"]; !ok {
				t.Errorf("the image exposes %v, want 9477/tcp", c.ExposedPorts)
			}

			root := t.TempDir()
			files := unpackImage(t, img, root)
			binary := releaseBinary(t, arch)
			if got, err := os.ReadFile(filepath.Join(root, "usr/bin/gpuwatch")); err != nil || !bytes.Equal(got, binary) {
				t.Errorf("the image's /usr/bin/gpuwatch is not the release's binary (%v)", err)
			}
			if h := files["usr/bin/gpuwatch"]; h == nil || h.Mode&0o111 == 0 {
				t.Errorf("/usr/bin/gpuwatch is not executable: %+v", h)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "etc/gpuwatch/config.yaml")); !bytes.Equal(got, readRepo(t, "config.example.yaml")) {
				t.Error("the image's /etc/gpuwatch/config.yaml is not config.example.yaml")
			}
			if passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd")); !strings.Contains(string(passwd), "\ngpuwatch:x:10001:10001:") {
				t.Errorf("/etc/passwd has no user gpuwatch (10001):\n%s", passwd)
			}
			if h := files["var/lib/gpuwatch"]; h == nil || h.Uid != 10001 || h.Typeflag != tar.TypeDir {
				t.Errorf("/var/lib/gpuwatch: %+v, want a folder of user 10001", h)
			}
			for _, want := range []string{"sbin/ldconfig", "etc/ld.so.conf", "usr/share/zoneinfo/Europe/Berlin"} {
				if files[want] == nil {
					t.Errorf("the image has no /%s", want)
				}
			}
			bundle, _ := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
			if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(bundle) || strings.Count(string(bundle), "BEGIN CERTIFICATE") < 100 {
				t.Errorf("/etc/ssl/certs/ca-certificates.crt holds %d certificates, want Debian's (over 100)", strings.Count(string(bundle), "BEGIN CERTIFICATE"))
			}
			for name, h := range files {
				if h.Uid != 0 && name != "var/lib/gpuwatch" {
					t.Errorf("/%s belongs to %d, want root", name, h.Uid)
				}
			}

			// The image's gpuwatch, run by the image's dynamic loader on
			// the image's C library.
			var cmd []string
			var env []string
			switch {
			case arch == "amd64" && runtime.GOARCH == "amd64":
				cmd = []string{filepath.Join(root, "lib/x86_64-linux-gnu/ld-2.31.so"), "--library-path", filepath.Join(root, "lib/x86_64-linux-gnu")}
			case arch == "arm64":
				qemu := need(t, "qemu-aarch64", "apt-get install qemu-user")
				cmd, env = []string{qemu}, []string{"QEMU_LD_PREFIX=" + root}
			default:
				t.Skipf("cannot run linux/%s here", arch)
			}
			cmd = append(cmd, filepath.Join(root, "usr/bin/gpuwatch"), "version")
			if got := run(t, "", env, cmd[0], cmd[1:]...); got.code != 0 || !strings.HasPrefix(got.stdout, "gpuwatch v") {
				t.Errorf("the image's gpuwatch version, on its own C library: exit %d %q %s", got.code, got.stdout, got.stderr)
			}
		})
	}
}

// unpackImage writes the image's file system into root and returns the
// tar headers of its files, by path.
func unpackImage(t *testing.T, img v1.Image, root string) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]*tar.Header{}
	r := tar.NewReader(rc)
	for {
		h, err := r.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		dst := filepath.Join(root, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, dst)
		case tar.TypeReg:
			var body []byte
			if body, err = io.ReadAll(r); err == nil {
				err = os.WriteFile(dst, body, os.FileMode(h.Mode)&0o755|0o600)
			}
		}
		if err != nil {
			t.Fatalf("unpack %s: %v", h.Name, err)
		}
	}
}

// releaseBinary is the gpuwatch binary of the release's tarball for arch.
func releaseBinary(t *testing.T, arch string) []byte {
	t.Helper()
	dir := t.TempDir()
	if got := run(t, "", nil, "tar", "-xzf", artifact(t, "gpuwatch_*_linux_"+arch+".tar.gz"), "-C", dir, "--strip-components=1"); got.code != 0 {
		t.Fatalf("tar: %s", got.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gpuwatch"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRepo(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
