package chart

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"io"
)

// encodePNG writes img, opaque, as an 8-bit RGB PNG. A chart is mostly
// flat ground, straight rules and repeated rows, so each row is filtered
// with whichever of PNG's two cheapest filters leaves it smaller, Sub
// (each byte less the pixel to its left) or Up (less the pixel above):
// image/png weighs all five, and its Average and Paeth passes cost as
// much as the drawing while shrinking a chart by little. The rows are
// compressed at zlib's fastest level, as image/png's BestSpeed does.
func encodePNG(w io.Writer, img *image.RGBA) error {
	width, height := img.Rect.Dx(), img.Rect.Dy()
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	if err != nil {
		return err
	}
	n := 3 * width
	prev, cur := make([]byte, n), make([]byte, n)
	sub, up := make([]byte, 1+n), make([]byte, 1+n)
	sub[0], up[0] = 1, 2 // the filter types
	for y := range height {
		row := img.Pix[img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y):]
		for x := range width {
			copy(cur[3*x:3*x+3], row[4*x:4*x+3])
		}
		var costSub, costUp int
		for i, v := range cur {
			var left byte
			if i >= 3 {
				left = cur[i-3]
			}
			s, u := v-left, v-prev[i]
			sub[1+i], up[1+i] = s, u
			costSub += cost(s)
			costUp += cost(u)
		}
		best := up
		if costSub < costUp {
			best = sub
		}
		if _, err := zw.Write(best); err != nil {
			return err
		}
		prev, cur = cur, prev
	}
	if err := zw.Close(); err != nil {
		return err
	}
	var header [13]byte
	binary.BigEndian.PutUint32(header[0:], uint32(width))
	binary.BigEndian.PutUint32(header[4:], uint32(height))
	header[8], header[9] = 8, 2 // 8 bits a sample, truecolour; deflate, adaptive filters, no interlace
	if _, err := io.WriteString(w, "\x89PNG\r\n\x1a\n"); err != nil {
		return err
	}
	for _, c := range []struct {
		kind string
		data []byte
	}{{"IHDR", header[:]}, {"IDAT", idat.Bytes()}, {"IEND", nil}} {
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
