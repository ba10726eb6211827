package proc

import (
	"maps"
	"testing"
)

func TestParsePasswd(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[int]string
	}{
		{"empty", "", map[int]string{}},
		{
			"typical",
			"root:x:0:0:root:/root:/bin/bash\n" +
				"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
				"alice:x:1001:1001:Alice Liddell,,,:/home/alice:/bin/zsh\n",
			map[int]string{0: "root", 1: "daemon", 65534: "nobody", 1001: "alice"},
		},
		{
			"comments blanks and nis entries skipped",
			"# local users\n\n+@admins::::::\n-bob\n+\nalice:x:1001:1001::/home/alice:/bin/sh\n",
			map[int]string{1001: "alice"},
		},
		{
			"first of duplicate uids wins",
			"root:x:0:0::/root:/bin/sh\ntoor:x:0:0::/root:/bin/csh\n",
			map[int]string{0: "root"},
		},
		{
			"malformed lines skipped",
			"short:x\n:x:5:5::/:/bin/sh\nbad:x:abc:1::/:/bin/sh\nneg:x:-1:1::/:/bin/sh\nbig:x:4294967296:1::/:/bin/sh\nok:x:7:7\n",
			map[int]string{7: "ok"},
		},
		{"crlf line ends", "carol:x:1002:1002::/home/carol:/bin/sh\r\n", map[int]string{1002: "carol"}},
		{"empty password field", "dave::1003:1003::/home/dave:/bin/sh", map[int]string{1003: "dave"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParsePasswd(tt.text); !maps.Equal(got, tt.want) {
				t.Errorf("ParsePasswd(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}
