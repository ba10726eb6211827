package proc

import (
	"strconv"
	"strings"
)

// ParseStatusUID returns the real uid of a process from the text of its
// /proc/PID/status file, whose "Uid:" line holds the real, effective, saved
// and filesystem uids separated by tabs. ok is false when the text has no
// "Uid:" line or its first field is not a uid (a number from 0 to 2^32-1).
func ParseStatusUID(text string) (uid int, ok bool) {
	for line := range strings.Lines(text) {
		rest, found := strings.CutPrefix(line, "Uid:")
		if !found {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(fields[0], 10, 32)
		if err != nil {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

// parseStatComm returns the command name from the text of /proc/PID/stat,
// the field between the first "(" and the last ")": the name itself may
// hold spaces and parentheses. ok is false when the text has no such field.
func parseStatComm(text string) (comm string, ok bool) {
	open := strings.IndexByte(text, '(')
	end := strings.LastIndexByte(text, ')')
	if open < 0 || end < open {
		return "", false
	}
	return text[open+1 : end], true
}
