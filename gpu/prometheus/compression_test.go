package prometheus

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompressedAnswers reads a recorded answer sent gzipped, as
// Prometheus and VictoriaMetrics send it to a client that accepts gzip,
// and sent plain, as a far side that ignores Accept-Encoding does, one
// after the other through the same source: the snapshots are the same.
// An answer whose body is not the gzip its Content-Encoding says, is cut
// short, or comes in an encoding gpuwatch did not ask for, is an error
// saying so.
func TestCompressedAnswers(t *testing.T) {
	answer, err := os.ReadFile(filepath.Join("testdata", "gpuwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(answer)
	zw.Close()
	gzipped := z.Bytes()

	var encoding string
	var body []byte
	f := newFakePrometheus(t)
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Accept-Encoding"); got != "gzip" {
			t.Errorf("Accept-Encoding %q, want gzip", got)
		}
		if encoding != "" {
			w.Header().Set("Content-Encoding", encoding)
		}
		w.Write(body)
	})
	src := newSource(t, f, Options{})
	read := func(enc string, b []byte) (string, error) {
		encoding, body = enc, b
		snaps, err := src.q.SampleFleet(t.Context(), at0)
		return describe(snaps), err
	}
	plain, err := read("", answer)
	if err != nil || !strings.Contains(plain, "host ") {
		t.Fatalf("plain answer: %v\n%s", err, plain)
	}
	for i, encoding := range []string{"gzip", "", "gzip", "x-gzip"} {
		b := answer
		if encoding != "" {
			b = gzipped
		}
		got, err := read(encoding, b)
		if err != nil || got != plain {
			t.Errorf("answer %d, Content-Encoding %q: %v\n%s\nwant\n%s", i, encoding, err, got, plain)
		}
	}
	for _, c := range []struct {
		encoding string
		body     []byte
		want     string
	}{
		{"gzip", answer, "not the gzip its Content-Encoding says"},
		{"gzip", gzipped[:len(gzipped)/2], "unexpected EOF"},
		{"br", answer, `Content-Encoding gpuwatch does not read, "br"`},
	} {
		if _, err := read(c.encoding, c.body); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Content-Encoding %q, %d bytes: got %v, want an error saying %q", c.encoding, len(c.body), err, c.want)
		}
	}
	if got, err := read("gzip", gzipped); err != nil || got != plain {
		t.Errorf("after the bad answers: %v\n%s", err, got)
	}
}

// TestUncompressedAnswers asks for answers with compression none: the
// source says so (Accept-Encoding: identity), Prometheus sends the answer
// as it is, and the snapshots are those of a source that asks for gzip.
// A compression other than gzip or none is refused.
func TestUncompressedAnswers(t *testing.T) {
	answer, err := os.ReadFile(filepath.Join("testdata", "gpuwatch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var asked, sent []string
	f := newFakePrometheus(t)
	serve := compressing(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(answer) }))
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		serve.ServeHTTP(w, r)
		sent = append(sent, w.Header().Get("Content-Encoding"))
	})
	snapshots := func(c Compression) string {
		snaps, err := newSource(t, f, Options{Compression: c}).q.SampleFleet(t.Context(), at0)
		if err != nil {
			t.Fatalf("compression %q: %v", c, err)
		}
		return describe(snaps)
	}
	zipped, plain := snapshots(""), snapshots(CompressionNone)
	if plain != zipped || !strings.Contains(plain, "host ") {
		t.Errorf("compression none:\n%s\nwant what gzip gives:\n%s", plain, zipped)
	}
	if want := []string{"gzip", "identity"}; !slices.Equal(asked, want) {
		t.Errorf("Accept-Encoding %q, want %q", asked, want)
	}
	if want := []string{"gzip", ""}; !slices.Equal(sent, want) {
		t.Errorf("Content-Encoding %q, want %q", sent, want)
	}
	if _, err := New(Options{URL: f.URL, Compression: "zstd"}); err == nil || !strings.Contains(err.Error(), `compression "zstd" is not gzip or none`) {
		t.Errorf("compression zstd: got %v, want it refused", err)
	}
}
