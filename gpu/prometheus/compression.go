package prometheus

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Compression is how the source asks the query API to send its answers.
type Compression string

const (
	// CompressionGzip asks for answers gzipped, which Prometheus,
	// VictoriaMetrics, Thanos and Mimir all send to a client that accepts
	// it. A fleet's answer is highly repetitive (the same labels on every
	// GPU's ten series): gzip sends a twelfth of it, fewer bytes for the
	// network to carry and for the hub to wait on. The source asks for
	// it itself, rather than leaving it to Go's transport, so that it
	// reads the answer through one decompressor kept across queries,
	// klauspost's, a third faster than compress/gzip's, reading the
	// socket in large pieces.
	CompressionGzip Compression = "gzip"
	// CompressionNone asks for answers as they are: twelve times the
	// bytes, but neither Prometheus compressing them nor the hub
	// decompressing them (a sixth of a hub's CPU at 10,000 GPUs). For a
	// hub on the same host or network as Prometheus.
	CompressionNone Compression = "none"
)

// ParseCompression checks a compression's name; "" is CompressionGzip.
func ParseCompression(name string) (Compression, error) {
	switch c := Compression(name); c {
	case "":
		return CompressionGzip, nil
	case CompressionGzip, CompressionNone:
		return c, nil
	}
	return "", fmt.Errorf("compression %q is not gzip or none", clip(name, 40))
}

// acceptEncoding is the Accept-Encoding header that asks for c.
func (c Compression) acceptEncoding() string {
	if c == CompressionNone {
		return "identity"
	}
	return "gzip"
}

// socketRead is how much of a compressed answer is read from the socket
// at once.
const socketRead = 64 << 10

// decompressor reads the body of an answer as the query API wrote it,
// before its Content-Encoding: its buffers are kept from one answer to
// the next.
type decompressor struct {
	in *bufio.Reader
	gz *gzip.Reader
}

// body is resp's body, decompressed if it came compressed.
func (z *decompressor) body(resp *http.Response) (io.Reader, error) {
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return resp.Body, nil
	case "gzip", "x-gzip":
	default:
		return nil, fmt.Errorf("the answer is in a Content-Encoding gpuwatch does not read, %q: it asked for gzip or none", clip(enc, 40))
	}
	if z.in == nil {
		z.in = bufio.NewReaderSize(resp.Body, socketRead)
	} else {
		z.in.Reset(resp.Body)
	}
	var err error
	if z.gz == nil {
		z.gz, err = gzip.NewReader(z.in)
	} else {
		err = z.gz.Reset(z.in)
	}
	if err != nil {
		return nil, fmt.Errorf("the answer is not the gzip its Content-Encoding says: %w", err)
	}
	return z.gz, nil
}
