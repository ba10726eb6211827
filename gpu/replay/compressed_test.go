package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipFile writes data gzip-compressed to a file in a test folder.
func gzipFile(t *testing.T, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpu.csv.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// countSnapshots reads r to the end.
func countSnapshots(r *Reader) (int, error) {
	n := 0
	for {
		_, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func TestOpenGzip(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("testdata", "thermal.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := func() int {
		r, err := Open(filepath.Join("testdata", "thermal.csv"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n, err := countSnapshots(r)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}()
	r, err := Open(gzipFile(t, plain), Options{})
	if err != nil {
		t.Fatalf("Open(a gzip log): %v", err)
	}
	defer r.Close()
	got, err := countSnapshots(r)
	if err != nil || got != want {
		t.Errorf("a gzip log gave %d snapshots (err %v), want the %d of the plain log", got, err, want)
	}
}

func TestOpenDamagedGzip(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("testdata", "thermal.csv"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(gzipFile(t, plain))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.csv.gz")
	if err := os.WriteFile(cut, full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(cut, Options{})
	if err != nil {
		t.Fatalf("Open(a cut gzip log): %v; want the header read and the error later", err)
	}
	defer r.Close()
	n, err := countSnapshots(r)
	if err == nil || !strings.Contains(err.Error(), "cut.csv.gz: the gzip data is damaged or cut short") {
		t.Errorf("reading a gzip log cut in half: got %d snapshots and error %v, want an error saying the gzip data is damaged", n, err)
	}
	if n == 0 {
		t.Errorf("got no snapshots before the damage, want the rows before it")
	}

	badHeader := filepath.Join(t.TempDir(), "bad.csv.gz")
	if err := os.WriteFile(badHeader, []byte{0x1f, 0x8b, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(badHeader, Options{}); err == nil || !strings.Contains(err.Error(), "gzip header is damaged") {
		t.Errorf("Open(a damaged gzip header): got %v, want an error naming the damaged header", err)
	}
}
