package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

const (
	maxLine    = 1 << 20 // longest line read; an nvidia-smi row is ~200 bytes
	bufferSize = 64 << 10
)

// lineReader reads a log line by line and counts the lines, so that every
// format can say where a problem is.
type lineReader struct {
	name  string
	br    *bufio.Reader
	line  int    // number of the last line read
	long  []byte // holds lines longer than the bufio buffer
	ioErr error
	back  bool // the last line is to be read again
	last  []byte
	// pipes says that the log's fields are apart by | (a table of a
	// script's, "time | gpu | mem | util"): lines are read with commas
	// for them.
	pipes bool
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{name: name, br: bufio.NewReaderSize(r, bufferSize)}
}

// next returns the next line without its line ending, or io.EOF at the
// end. The line is valid until the next call.
func (l *lineReader) next() ([]byte, error) {
	if l.back {
		l.back = false
		return l.last, nil
	}
	if l.ioErr != nil {
		return nil, l.ioErr
	}
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			if len(l.long) <= maxLine {
				l.long = append(l.long, line...)
			}
		}
		line = l.long
	}
	if terr, ok := err.(*textError); ok && len(line) == 0 {
		l.ioErr = &ParseError{l.name, l.line + 1, 1, terr.msg}
		return nil, l.ioErr
	}
	if err != nil && err != io.EOF && !isTextError(err) {
		l.ioErr = fmt.Errorf("read %s: %w", l.name, err)
		return nil, l.ioErr
	}
	if len(line) == 0 {
		return nil, io.EOF
	}
	l.line++
	if len(line) > maxLine {
		return nil, &ParseError{l.name, l.line, 1,
			"line is longer than 1 MiB; is this a GPU log (nvidia-smi's CSV or table, dmon, or a script's CSV)?"}
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if l.pipes {
		line = pipesToCommas(line)
	}
	l.last = line
	return line, nil
}

// pipesToCommas turns a line whose fields are apart by | into one whose
// fields are apart by commas, in place: "| a | b |" is " a , b ". A rule
// ("|---|---|") is an empty line.
func pipesToCommas(line []byte) []byte {
	t := trimSpace(line)
	t = bytes.TrimPrefix(t, []byte{'|'})
	t = bytes.TrimSuffix(t, []byte{'|'})
	if len(bytes.Trim(t, "|-:+= ")) == 0 {
		return t[:0]
	}
	for i, c := range t {
		if c == '|' {
			t[i] = ','
		}
	}
	return t
}

// pipeHeader parses a header whose columns are apart by |.
func pipeHeader(line []byte) (header, bool) {
	if bytes.IndexByte(line, '|') < 0 || bytes.IndexByte(line, ',') >= 0 {
		return header{}, false
	}
	h, ferr := parseHeader(pipesToCommas(bytes.Clone(line)))
	return h, ferr == nil
}

// unread makes next return the last line again. The line must not have
// been changed, and next not called since.
func (l *lineReader) unread() { l.back = true }

// peekLines returns the first lines still to be read, as far as the buffer
// holds them (at most n), without reading them. The last one may be cut
// short.
func (l *lineReader) peekLines(n int) [][]byte {
	buf, _ := l.br.Peek(bufferSize)
	var lines [][]byte
	for len(buf) > 0 && len(lines) < n {
		line, rest, _ := bytes.Cut(buf, []byte{'\n'})
		lines = append(lines, bytes.TrimSuffix(line, []byte{'\r'}))
		buf = rest
	}
	return lines
}

func isTextError(err error) bool {
	_, ok := err.(*textError)
	return ok
}
