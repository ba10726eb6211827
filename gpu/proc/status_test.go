package proc

import "testing"

// statusFixture is a /proc/PID/status of a process whose real uid (1001)
// differs from its effective uid (0), as for a setuid program.
const statusFixture = `Name:	python3
Umask:	0022
State:	S (sleeping)
Tgid:	48213
Ngid:	0
Pid:	48213
PPid:	48190
TracerPid:	0
Uid:	1001	0	0	0
Gid:	1001	1001	1001	1001
FDSize:	256
Groups:	27 1001
VmPeak:	 40964712 kB
Threads:	57
`

func TestParseStatusUID(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantUID int
		wantOK  bool
	}{
		{"real uid not effective", statusFixture, 1001, true},
		{"root", "Name:\tkthreadd\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n", 0, true},
		{"largest uid", "Uid:\t4294967294\t4294967294\t4294967294\t4294967294\n", 4294967294, true},
		{"spaces not tabs", "Uid: 1000 1000 1000 1000", 1000, true},
		{"first line wins", "Uid:\t5\t5\t5\t5\nUid:\t6\t6\t6\t6\n", 5, true},
		{"empty", "", 0, false},
		{"no uid line", "Name:\tx\nGid:\t1\t1\t1\t1\n", 0, false},
		{"empty uid line", "Uid:\n", 0, false},
		{"negative uid", "Uid:\t-1\t0\t0\t0\n", 0, false},
		{"uid overflows 32 bits", "Uid:\t4294967296\t0\t0\t0\n", 0, false},
		{"not a number", "Uid:\tme\t0\t0\t0\n", 0, false},
		{"prefix must start the line", "XUid:\t7\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, ok := ParseStatusUID(tt.text)
			if uid != tt.wantUID || ok != tt.wantOK {
				t.Errorf("ParseStatusUID(%q) = %d, %v, want %d, %v", tt.text, uid, ok, tt.wantUID, tt.wantOK)
			}
		})
	}
}

func TestParseStatComm(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantComm string
		wantOK   bool
	}{
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 10 0 0\n", "kthreadd", true},
		{"spaces and parens in name", "77 (a (b) c) R 1 77 77 0 -1 4194560 0 0 0 0\n", "a (b) c", true},
		{"empty name", "9 () Z 1\n", "", true},
		{"no parens", "9 x Z 1\n", "", false},
		{"close before open", "9 )x( Z 1\n", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comm, ok := parseStatComm(tt.text)
			if comm != tt.wantComm || ok != tt.wantOK {
				t.Errorf("parseStatComm(%q) = %q, %v, want %q, %v", tt.text, comm, ok, tt.wantComm, tt.wantOK)
			}
		})
	}
}
