package proc

import (
	"strings"
	"unicode"
)

// ParseCmdline returns the command line of a process from the raw bytes of
// its /proc/PID/cmdline file: the arguments, which the kernel separates (and
// ends) with NUL bytes, joined with single spaces, with surrounding space
// trimmed. Control characters inside an argument become "?" and bytes that
// are not UTF-8 become U+FFFD, so the result is safe to print on one line, in
// a log or in a chat message. A kernel thread or a zombie has an empty
// cmdline, and so an empty result.
func ParseCmdline(raw []byte) string {
	s := strings.ToValidUTF8(string(raw), "\uFFFD")
	s = strings.TrimRight(s, "\x00")
	return strings.TrimSpace(strings.Map(printable, s))
}

// printable maps NUL, the argument separator, to a space and every other
// control character to "?".
func printable(r rune) rune {
	switch {
	case r == 0:
		return ' '
	case unicode.IsControl(r):
		return '?'
	}
	return r
}
