package replay

import "fmt"

// ParseError reports a problem at one place in an nvidia-smi CSV log: a bad
// header, a malformed row or rows out of time order. Line and Col are 1-based;
// Col counts bytes from the start of the line.
type ParseError struct {
	File string
	Line int
	Col  int
	Msg  string
}

// Error returns the error as "FILE:LINE:COL: message", the form editors and
// `gpuwatch check` understand.
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// fieldError is a problem inside one line, before the reader adds the file
// name and line number.
type fieldError struct {
	col int
	msg string
}
