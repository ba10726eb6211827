package proc

import "testing"

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"empty kernel thread", "", ""},
		{"one arg", "/usr/bin/nvidia-smi\x00", "/usr/bin/nvidia-smi"},
		{"args", "python3\x00train.py\x00--epochs\x0010\x00", "python3 train.py --epochs 10"},
		{"no trailing nul", "python3\x00-c\x00print(1)", "python3 -c print(1)"},
		{"empty argument kept", "a\x00\x00b\x00", "a  b"},
		{"setproctitle rewrote argv", "postgres: checkpointer   \x00\x00\x00\x00", "postgres: checkpointer"},
		{"spaces in an argument", "bash\x00-c\x00sleep 10; echo done\x00", "bash -c sleep 10; echo done"},
		{"newline and escape become ?", "sh\x00-c\x00a\nb\x1b[31m\x00", "sh -c a?b?[31m"},
		{"invalid utf-8", "x\xff\xfey\x00", "x\uFFFDy"},
		{"unicode kept", "python3\x00données.py\x00", "python3 données.py"},
		{"only nuls", "\x00\x00\x00", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseCmdline([]byte(tt.raw)); got != tt.want {
				t.Errorf("ParseCmdline(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}
