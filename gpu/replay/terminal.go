package replay

import (
	"bufio"
	"bytes"
	"unicode/utf8"
)

// A screen captured from a terminal (`watch nvidia-smi` or `gpustat -i`
// under `script`, or redirected) is not lines of text but a stream of
// writes to a screen: the cursor moved, lines erased, and, after the first
// frame, only what changed redrawn in place. screenReader replays the
// writes on a screen of its own and hands out each frame as it stood, as
// lines of plain text followed by a blank line, for the formats to read as
// if the tool had printed its frames one after the other.
//
// A frame ends when the cursor goes back to the screen's top line (where
// watch redraws its title, the time in it, at every refresh) or the
// screen is cleared, after something was written since the frame began.

// Screen limits: a capture's screen is a terminal's; more is garbage, not
// a screen, and is not drawn.
const (
	maxScreenRows = 500
	maxScreenCols = 1000
	maxEscape     = 64 // bytes of one escape sequence
)

// isScreenCapture reports whether the start of a text moves the cursor or
// clears the screen, as a captured terminal does: ESC [ … H, J, f, A–D, d,
// G, or the alternate screen (ESC [ ? 1049 h).
func isScreenCapture(head []byte) bool {
	for i := bytes.Index(head, []byte("\x1b[")); i >= 0; {
		j := i + 2
		for j < len(head) && j-i < maxEscape && (isDigit(head[j]) || head[j] == ';' || head[j] == '?') {
			j++
		}
		if j < len(head) && bytes.IndexByte([]byte("HJfABCDdG"), head[j]) >= 0 {
			return true
		}
		if j < len(head) && head[j] == 'h' && bytes.HasPrefix(head[i:], []byte("\x1b[?1049h")) {
			return true
		}
		next := bytes.Index(head[j:], []byte("\x1b["))
		if next < 0 {
			return false
		}
		i = j + next
	}
	return false
}

// screenReader turns the writes of a captured terminal into its frames.
type screenReader struct {
	in      *bufio.Reader
	rows    [][]rune
	x, y    int
	savedX  int
	savedY  int
	written bool   // something was drawn since the frame began
	out     []byte // frames not yet read
	err     error
	read    int // bytes of the capture replayed
	drawn   int // bytes of frames handed out
}

// maxScreenGrowth bounds how much larger the frames may be than the
// capture: a real one redraws a few cells a frame, and a capture whose
// frames are far larger than itself is not one, and must not fill memory.
const maxScreenGrowth = 256

// textError is a problem with a log's text as a whole, which the line
// reader reports as a *ParseError at the line it reached.
type textError struct{ msg string }

func (e *textError) Error() string { return e.msg }

func newScreenReader(r *bufio.Reader) *screenReader { return &screenReader{in: r} }

func (s *screenReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.step()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	if len(s.out) == 0 {
		s.out = s.out[:0:0]
	}
	return n, nil
}

// step reads and replays some of the capture.
func (s *screenReader) step() {
	for range 4096 {
		c, err := s.in.ReadByte()
		if err != nil {
			s.frame()
			if s.err == nil {
				s.err = err
			}
			return
		}
		s.read++
		switch {
		case c == 0x1b:
			s.escape()
		case c == '\r':
			s.x = 0
		case c == '\n':
			s.x = 0
			s.move(s.y + 1)
		case c == '\b':
			s.x = max(s.x-1, 0)
		case c == '\t':
			s.x = min((s.x/8+1)*8, maxScreenCols-1)
		case c < 0x20 || c == 0x7f:
			// a bell or another control: nothing drawn
		case c < utf8.RuneSelf:
			s.put(rune(c))
		default:
			s.in.UnreadByte()
			r, _, err := s.in.ReadRune()
			if err != nil {
				continue
			}
			s.put(r)
		}
		if len(s.out) > 0 || s.err != nil {
			return
		}
	}
}

// escape replays an escape sequence; ESC has been read.
func (s *screenReader) escape() {
	c, err := s.in.ReadByte()
	if err != nil {
		return
	}
	switch c {
	case '[':
		s.csi()
	case ']': // a title: up to BEL or ESC \
		for range 4096 {
			b, err := s.in.ReadByte()
			if err != nil || b == 0x07 {
				return
			}
			if b == 0x1b {
				s.in.ReadByte()
				return
			}
		}
	case '(', ')', '*', '+', '#', '%': // a character set: one more byte
		s.in.ReadByte()
	case '7':
		s.savedX, s.savedY = s.x, s.y
	case '8':
		s.x = s.savedX
		s.move(s.savedY)
	case 'M':
		s.move(s.y - 1)
	case 'D', 'E':
		s.move(s.y + 1)
		if c == 'E' {
			s.x = 0
		}
	case 'c':
		s.clear()
	}
}

// csi replays a control sequence: ESC [ params final.
func (s *screenReader) csi() {
	var params [8]int
	n, private := 0, false
	var final byte
	for i := 0; i < maxEscape; i++ {
		b, err := s.in.ReadByte()
		if err != nil {
			return
		}
		switch {
		case isDigit(b):
			if n == 0 {
				n = 1
			}
			if params[n-1] < 10000 {
				params[n-1] = params[n-1]*10 + int(b-'0')
			}
		case b == ';':
			if n == 0 {
				n = 1
			}
			if n < len(params) {
				n++
			}
		case b == '?' || b == '>' || b == '=' || b == '!':
			private = true
		case b >= 0x40 && b <= 0x7e:
			final = b
			i = maxEscape
		}
	}
	if private {
		return // modes: the alternate screen, the cursor's visibility
	}
	p := func(i, def int) int {
		if i >= n || params[i] == 0 {
			return def
		}
		return params[i]
	}
	switch final {
	case 'H', 'f':
		s.x = min(p(1, 1)-1, maxScreenCols-1)
		s.move(p(0, 1) - 1)
	case 'A':
		s.move(s.y - p(0, 1))
	case 'B', 'e':
		s.move(s.y + p(0, 1))
	case 'C', 'a':
		s.x = min(s.x+p(0, 1), maxScreenCols-1)
	case 'D':
		s.x = max(s.x-p(0, 1), 0)
	case 'E':
		s.x = 0
		s.move(s.y + p(0, 1))
	case 'F':
		s.x = 0
		s.move(s.y - p(0, 1))
	case 'G', '`':
		s.x = min(p(0, 1)-1, maxScreenCols-1)
	case 'd':
		s.move(p(0, 1) - 1)
	case 'J':
		switch p(0, 0) {
		case 0:
			s.eraseLine(s.y, s.x, maxScreenCols)
			for y := s.y + 1; y < len(s.rows); y++ {
				s.rows[y] = s.rows[y][:0]
			}
		case 1:
			for y := 0; y < s.y && y < len(s.rows); y++ {
				s.rows[y] = s.rows[y][:0]
			}
			s.eraseLine(s.y, 0, s.x+1)
		default:
			s.clear()
		}
	case 'K':
		switch p(0, 0) {
		case 0:
			s.eraseLine(s.y, s.x, maxScreenCols)
		case 1:
			s.eraseLine(s.y, 0, s.x+1)
		default:
			s.eraseLine(s.y, 0, maxScreenCols)
		}
	case 'X':
		s.eraseLine(s.y, s.x, s.x+p(0, 1))
	case 'P':
		if s.y < len(s.rows) && s.x < len(s.rows[s.y]) {
			row := s.rows[s.y]
			k := min(p(0, 1), len(row)-s.x)
			s.rows[s.y] = append(row[:s.x], row[s.x+k:]...)
		}
	case '@':
		if s.y < len(s.rows) && s.x < len(s.rows[s.y]) {
			row := s.rows[s.y]
			k := min(p(0, 1), maxScreenCols-len(row))
			row = append(row, make([]rune, k)...)
			copy(row[s.x+k:], row[s.x:])
			for i := s.x; i < s.x+k; i++ {
				row[i] = ' '
			}
			s.rows[s.y] = row
		}
	}
}

// move puts the cursor on line y; back to the top line, a frame that was
// drawn is done.
func (s *screenReader) move(y int) {
	y = min(max(y, 0), maxScreenRows-1)
	if y == 0 && s.y != 0 {
		s.frame()
	}
	s.y = y
}

// clear empties the screen, after handing out the frame it held.
func (s *screenReader) clear() {
	s.frame()
	for y := range s.rows {
		s.rows[y] = s.rows[y][:0]
	}
}

// put draws a character at the cursor and moves it on.
func (s *screenReader) put(r rune) {
	if s.x >= maxScreenCols {
		return
	}
	for len(s.rows) <= s.y {
		s.rows = append(s.rows, nil)
	}
	row := s.rows[s.y]
	for len(row) <= s.x {
		row = append(row, ' ')
	}
	row[s.x] = r
	s.rows[s.y] = row
	s.x++
	s.written = true
}

// eraseLine blanks columns [from, to) of line y.
func (s *screenReader) eraseLine(y, from, to int) {
	if y >= len(s.rows) {
		return
	}
	row := s.rows[y]
	if to >= len(row) {
		if from < len(row) {
			s.rows[y] = row[:from]
		}
		return
	}
	for i := from; i < to; i++ {
		row[i] = ' '
	}
}

// frame hands out the screen as it stands, if something was drawn since
// the last frame: its lines, without the blanks at their ends, and a blank
// line after them.
func (s *screenReader) frame() {
	if !s.written {
		return
	}
	s.written = false
	before := len(s.out)
	for _, row := range s.rows {
		end := len(row)
		for end > 0 && (row[end-1] == ' ' || row[end-1] == 0) {
			end--
		}
		for _, r := range row[:end] {
			if r == 0 {
				r = ' '
			}
			s.out = utf8.AppendRune(s.out, r)
		}
		s.out = append(s.out, '\n')
	}
	s.out = append(s.out, '\n')
	if s.drawn += len(s.out) - before; s.drawn > maxScreenGrowth*s.read+1<<20 {
		s.out = s.out[:0]
		s.err = &textError{"the terminal capture draws far more than it holds: is this a capture of watch or gpustat -i?"}
	}
}
