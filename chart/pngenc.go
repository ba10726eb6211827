package chart

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"io"
)

// encodePNG writes img, opaque, as an 8-bit RGB PNG (see pngWriter).
func encodePNG(w io.Writer, img *image.RGBA) error {
	p, err := newPNGWriter(img.Rect.Dx(), img.Rect.Dy())
	if err != nil {
		return err
	}
	if err := p.writeRows(img); err != nil {
		return err
	}
	return p.finish(w)
}

// pngWriter encodes an opaque picture as an 8-bit RGB PNG, taking its
// rows a strip at a time, so a figure need not hold all its pixels at
// once. A chart is mostly flat ground, straight rules and repeated rows,
// so each row is filtered with whichever of PNG's two cheapest filters
// leaves it smaller, Sub (each byte less the pixel to its left) or Up
// (less the pixel above): image/png weighs all five, and its Average and
// Paeth passes cost as much as the drawing while shrinking a chart by
// little. The rows are compressed at zlib's fastest level, as
// image/png's BestSpeed does.
type pngWriter struct {
	width, height, rows int
	idat                bytes.Buffer
	zw                  *zlib.Writer
	prev, cur           []byte // the last row written and this one, RGB
	sub, up             []byte // this row filtered each way, after its filter type
}

func newPNGWriter(width, height int) (*pngWriter, error) {
	p := &pngWriter{width: width, height: height}
	zw, err := zlib.NewWriterLevel(&p.idat, zlib.BestSpeed)
	if err != nil {
		return nil, err
	}
	n := 3 * width
	p.zw, p.prev, p.cur, p.sub, p.up = zw, make([]byte, n), make([]byte, n), make([]byte, 1+n), make([]byte, 1+n)
	p.sub[0], p.up[0] = 1, 2 // the filter types
	return p, nil
}

// writeRows encodes the rows of img, the next strip of the picture.
func (p *pngWriter) writeRows(img *image.RGBA) error {
	if img.Rect.Dx() != p.width || p.rows+img.Rect.Dy() > p.height {
		return fmt.Errorf("png: a strip of %v does not fit a %d×%d picture with %d rows written", img.Rect, p.width, p.height, p.rows)
	}
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		row := img.Pix[img.PixOffset(img.Rect.Min.X, y):]
		for x := range p.width {
			copy(p.cur[3*x:3*x+3], row[4*x:4*x+3])
		}
		var costSub, costUp int
		for i, v := range p.cur {
			var left byte
			if i >= 3 {
				left = p.cur[i-3]
			}
			s, u := v-left, v-p.prev[i]
			p.sub[1+i], p.up[1+i] = s, u
			costSub += cost(s)
			costUp += cost(u)
		}
		best := p.up
		if costSub < costUp {
			best = p.sub
		}
		if _, err := p.zw.Write(best); err != nil {
			return err
		}
		p.prev, p.cur = p.cur, p.prev
		p.rows++
	}
	return nil
}

// finish writes the PNG, once every row is in.
func (p *pngWriter) finish(w io.Writer) error {
	if p.rows != p.height {
		return fmt.Errorf("png: %d rows of %d written", p.rows, p.height)
	}
	if err := p.zw.Close(); err != nil {
		return err
	}
	var header [13]byte
	binary.BigEndian.PutUint32(header[0:], uint32(p.width))
	binary.BigEndian.PutUint32(header[4:], uint32(p.height))
	header[8], header[9] = 8, 2 // 8 bits a sample, truecolour; deflate, adaptive filters, no interlace
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	for _, c := range []struct {
		kind string
		data []byte
	}{{"IHDR", header[:]}, {"IDAT", p.idat.Bytes()}, {"IEND", nil}} {
		if err := writeChunk(w, c.kind, c.data); err != nil {
			return err
		}
	}
	return nil
}

// cost weighs a filtered byte as libpng does, by its distance from zero
// as a signed number: rows near zero compress best.
func cost(b byte) int {
	if b < 128 {
		return int(b)
	}
	return 256 - int(b)
}

// writeChunk writes one PNG chunk: length, type, data, CRC.
func writeChunk(w io.Writer, kind string, data []byte) error {
	var head [8]byte
	binary.BigEndian.PutUint32(head[:4], uint32(len(data)))
	copy(head[4:], kind)
	crc := crc32.NewIEEE()
	crc.Write(head[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
