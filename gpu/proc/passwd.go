package proc

import (
	"strconv"
	"strings"
)

// ParsePasswd returns the user names of a passwd(5) file by uid. Lines are
// "name:password:uid:gid:gecos:home:shell"; blank lines, comments, NIS
// entries ("+" or "-") and lines without a name or a numeric uid are
// skipped. When two lines share a uid the first wins, as getpwuid(3) does.
func ParsePasswd(text string) map[int]string {
	users := make(map[int]string)
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		fields := strings.SplitN(line, ":", 4)
		if len(fields) < 4 || fields[0] == "" {
			continue
		}
		n, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			continue
		}
		if _, dup := users[int(n)]; !dup {
			users[int(n)] = fields[0]
		}
	}
	return users
}
