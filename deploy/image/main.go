// Command image writes gpuwatch's container image for one architecture,
// without a container daemon, as the tarball `docker save` writes: `docker
// load` and `crane push` take it. scripts/release runs it:
//
//	go run ./image --binary BIN --arch amd64 --rootfs DIR --config FILE \
//	    --version v1.2.3 --created 2026-12-01T09:00:00Z --out FILE.tar
//
// The image is one layer: the C library, ldconfig, CA certificates and
// time zones of the Debian packages unpacked in --rootfs (go-nvml is cgo,
// and the NVIDIA container toolkit runs ldconfig in the container to add
// the host's driver libraries), the binary at /usr/bin/gpuwatch, the
// example config at /etc/gpuwatch/config.yaml, and the user gpuwatch
// (10001), who runs it and owns /var/lib/gpuwatch. Every file belongs to
// root and has the commit's time, so a release rebuilds the same image.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The user the image runs as: the Dockerfile's and the Kubernetes
// manifests' runAsUser.
const (
	uid  = 10001
	user = "gpuwatch"
)

type options struct {
	binary, arch, rootfs, config, version, out string
	created                                    time.Time
}

func main() {
	var o options
	var created string
	flag.StringVar(&o.binary, "binary", "", "the gpuwatch binary for the architecture")
	flag.StringVar(&o.arch, "arch", "", "the architecture, as Go names it: amd64 or arm64")
	flag.StringVar(&o.rootfs, "rootfs", "", "a folder holding the image's files from Debian packages (C library, ldconfig, CA certificates, time zones)")
	flag.StringVar(&o.config, "config", "", "the config to ship at /etc/gpuwatch/config.yaml")
	flag.StringVar(&o.version, "version", "", "gpuwatch's version, the image's tag: gpuwatch:VERSION")
	flag.StringVar(&created, "created", "", "the image's time, RFC 3339: the commit's")
	flag.StringVar(&o.out, "out", "", "the tarball to write")
	flag.Parse()
	if flag.NArg() > 0 || o.binary == "" || o.arch == "" || o.rootfs == "" || o.config == "" || o.version == "" || created == "" || o.out == "" {
		fmt.Fprintln(os.Stderr, "usage: image --binary BIN --arch ARCH --rootfs DIR --config FILE --version V --created TIME --out FILE")
		os.Exit(2)
	}
	var err error
	if o.created, err = time.Parse(time.RFC3339, created); err != nil {
		fmt.Fprintf(os.Stderr, "image: --created %q: %v\n", created, err)
		os.Exit(2)
	}
	if err := write(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// write builds the image and writes it, tagged gpuwatch:VERSION.
func write(o options) error {
	img, err := build(o)
	if err != nil {
		return err
	}
	tag, err := name.NewTag("gpuwatch:" + o.version)
	if err != nil {
		return fmt.Errorf("version %q is not an image tag: %w", o.version, err)
	}
	return tarball.WriteToFile(o.out, tag, img)
}

// Config returns the image's config: what runs, as whom, with what.
func Config(arch string, created time.Time) v1.ConfigFile {
	return v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{"/usr/bin/gpuwatch"},
			Cmd:        []string{"run", "--config", "/etc/gpuwatch/config.yaml"},
			User:       fmt.Sprintf("%d:%d", uid, uid),
			WorkingDir: "/var/lib/gpuwatch",
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				// The toolkit mounts the GPUs and, with "utility", NVML
				// and nvidia-smi; the image needs no compute libraries.
				"NVIDIA_VISIBLE_DEVICES=all",
				"NVIDIA_DRIVER_CAPABILITIES=utility",
			},
			ExposedPorts: map[string]struct{}{"9477/tcp": {}},
			Volumes:      map[string]struct{}{"/etc/gpuwatch": {}, "/var/lib/gpuwatch": {}},
			Labels: map[string]string{
				"org.opencontainers.image.title":    "gpuwatch",
				"org.opencontainers.image.licenses": "Apache-2.0",
				"org.opencontainers.image.source":   "https://github.com/gpuwatch/gpuwatch",
			},
		},
	}
}

func build(o options) (v1.Image, error) {
	layer, err := rootLayer(o)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: l, History: v1.History{
		Created: v1.Time{Time: o.created}, CreatedBy: "gpuwatch scripts/release", Comment: "gpuwatch " + o.version}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	want := Config(o.arch, o.created)
	want.RootFS, want.History = cfg.RootFS, cfg.History
	return mutate.ConfigFile(img, &want)
}

// rootLayer is the image's one layer, as an uncompressed tar.
func rootLayer(o options) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	var names []string
	add := func(h *tar.Header, body []byte) error {
		h.ModTime, h.Uname, h.Gname, h.Format = o.created, "", "", tar.FormatPAX
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if slices.Contains(names, h.Name) {
			return fmt.Errorf("%s twice in the image", h.Name)
		}
		names = append(names, h.Name)
		if err := w.WriteHeader(h); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	}
	dir := func(p string, mode int64, owner int) error {
		return add(&tar.Header{Name: p + "/", Typeflag: tar.TypeDir, Mode: mode, Uid: owner, Gid: owner}, nil)
	}
	file := func(p string, mode int64, body []byte) error {
		return add(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode}, body)
	}
	// The Debian files, in order, each as root's; folders the image adds
	// files to come from them too (etc, usr, usr/bin, var).
	err := filepath.WalkDir(o.rootfs, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == o.rootfs {
			return err
		}
		rel := filepath.ToSlash(path[len(o.rootfs)+1:])
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return dir(rel, int64(info.Mode().Perm()), 0)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return add(&tar.Header{Name: rel, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}, nil)
		case info.Mode().IsRegular():
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return file(rel, int64(info.Mode().Perm()), body)
		}
		return fmt.Errorf("%s: neither a file, a folder nor a link", path)
	})
	if err != nil {
		return nil, fmt.Errorf("--rootfs: %w", err)
	}
	for _, d := range []string{"etc", "usr", "usr/bin", "var", "var/lib"} {
		if !slices.Contains(names, d+"/") {
			if err := dir(d, 0o755, 0); err != nil {
				return nil, err
			}
		}
	}
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	config, err := os.ReadFile(o.config)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(
		file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:gpuwatch GPU monitor:/var/lib/gpuwatch:/usr/sbin/nologin\n", user, uid, uid)),
		file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", user, uid)),
		dir("etc/gpuwatch", 0o755, 0),
		file("etc/gpuwatch/config.yaml", 0o644, config),
		file("usr/bin/gpuwatch", 0o755, binary),
		dir("var/lib/gpuwatch", 0o750, uid),
		dir("tmp", 0o1777, 0),
	); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if !slices.Contains(names, "sbin/ldconfig") && !slices.Contains(names, "usr/sbin/ldconfig") {
		return nil, errors.New("--rootfs has no ldconfig (libc-bin): the NVIDIA container toolkit needs it to add the driver's libraries")
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "etc/ssl/certs/ca-certificates.crt") }) {
		return nil, errors.New("--rootfs has no etc/ssl/certs/ca-certificates.crt: gpuwatch could not check Slack's certificate")
	}
	return buf.Bytes(), nil
}
