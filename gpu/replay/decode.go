package replay

import (
	"bufio"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeText returns the text of a log as UTF-8, whatever wrote it: a byte
// order mark (editors, Excel) is dropped, and UTF-16 (PowerShell's
// `nvidia-smi > gpu.csv` writes UTF-16 with a byte order mark) is turned
// into UTF-8. UTF-16 without a mark is recognised by its zero bytes. Other
// text passes through unchanged.
func decodeText(r io.Reader) io.Reader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	head, _ := br.Peek(4)
	switch {
	case len(head) >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf:
		br.Discard(3)
		return br
	case len(head) >= 2 && head[0] == 0xff && head[1] == 0xfe:
		br.Discard(2)
		return &utf16Reader{r: br, little: true}
	case len(head) >= 2 && head[0] == 0xfe && head[1] == 0xff:
		br.Discard(2)
		return &utf16Reader{r: br}
	case len(head) == 4 && head[0] != 0 && head[1] == 0 && head[2] != 0 && head[3] == 0:
		return &utf16Reader{r: br, little: true}
	case len(head) == 4 && head[0] == 0 && head[1] != 0 && head[2] == 0 && head[3] != 0:
		return &utf16Reader{r: br}
	}
	return br
}

// utf16Reader turns UTF-16 text into UTF-8. An unpaired surrogate, or an
// odd byte at the end, becomes U+FFFD, which no format accepts, so the
// reader reports the line it is on.
type utf16Reader struct {
	r      *bufio.Reader
	little bool
	out    []byte // decoded, not yet returned
	err    error
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		u.fill()
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// fill decodes what the underlying reader has buffered, at least one unit.
func (u *utf16Reader) fill() {
	var buf [2048]byte
	out := buf[:0]
	for len(out) < len(buf)-utf8.UTFMax {
		r, err := u.unit()
		if err != nil {
			u.err = err
			break
		}
		if utf16.IsSurrogate(r) {
			r2, err := u.unit()
			if err != nil {
				u.err = err
				out = utf8.AppendRune(out, utf8.RuneError)
				break
			}
			r = utf16.DecodeRune(r, r2)
		}
		out = utf8.AppendRune(out, r)
		if u.r.Buffered() < 2 {
			break
		}
	}
	u.out = append(u.out[:0], out...)
}

// unit reads one UTF-16 code unit.
func (u *utf16Reader) unit() (rune, error) {
	b0, err := u.r.ReadByte()
	if err != nil {
		return 0, err
	}
	b1, err := u.r.ReadByte()
	if err == io.EOF {
		return utf8.RuneError, nil // an odd byte at the end
	}
	if err != nil {
		return 0, err
	}
	if u.little {
		return rune(b0) | rune(b1)<<8, nil
	}
	return rune(b1) | rune(b0)<<8, nil
}

// validUTF8Head reports whether the start of a text is UTF-8, a rune cut
// at its end aside.
func validUTF8Head(head []byte) bool {
	if utf8.Valid(head) {
		return true
	}
	for cut := 1; cut < utf8.UTFMax && cut <= len(head); cut++ {
		if utf8.RuneStart(head[len(head)-cut]) {
			return utf8.Valid(head[:len(head)-cut])
		}
	}
	return false
}

// latin1Reader turns ISO 8859-1 text into UTF-8: logs of Windows tools
// (GPU-Z, MSI Afterburner) write "°C" in their code page.
type latin1Reader struct {
	r   *bufio.Reader
	out []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	if len(l.out) == 0 {
		var buf [2048]byte
		n, err := l.r.Read(buf[:])
		if n == 0 {
			return 0, err
		}
		l.out = l.out[:0]
		for _, c := range buf[:n] {
			l.out = utf8.AppendRune(l.out, rune(c))
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	return n, nil
}
