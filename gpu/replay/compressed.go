package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// gzipMagic starts every gzip file.
var gzipMagic = []byte{0x1f, 0x8b}

// maybeGunzip returns r decompressed when it is gzip data, as rotated
// nvidia-smi logs often are (gpu.csv.gz), and r itself otherwise. name
// names the file in errors.
func maybeGunzip(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, bufferSize)
	head, err := br.Peek(len(gzipMagic))
	if err != nil || string(head) != string(gzipMagic) {
		return br, nil // too short to be gzip, or plain text: the CSV reader says what is wrong
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: starts like a gzip file but its gzip header is damaged: %w; decompress it by hand (gunzip) to see what is left", name, err)
	}
	return &gzipErrors{r: zr, name: name}, nil
}

// gzipErrors says, when a gzip stream fails mid-way, that the file is a
// damaged gzip file rather than reporting a bare decompressor error.
type gzipErrors struct {
	r    io.Reader
	name string
}

func (g *gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: the gzip data is damaged or cut short: %w; the rows before this point were read", g.name, err)
	}
	return n, err
}

// openText returns the text of a log: decompressed when it is gzip data,
// as UTF-8 (see decodeText), and, for a terminal's screen captured with
// its escape codes, the frames it showed (see screenReader).
func openText(r io.Reader, name string) (io.Reader, error) {
	z, err := maybeGunzip(r, name)
	if err != nil {
		return nil, err
	}
	text := decodeText(z)
	br, ok := text.(*bufio.Reader)
	if !ok || br.Size() < bufferSize {
		br = bufio.NewReaderSize(text, bufferSize)
	}
	head, _ := br.Peek(bufferSize)
	switch {
	case bytes.IndexByte(head, 0x1b) >= 0 && isScreenCapture(head):
		return newScreenReader(br), nil
	case !validUTF8Head(head):
		return &latin1Reader{r: br}, nil
	}
	return br, nil
}
