package cli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpuwatch/gpuwatch/cli"
)

func TestTestCommand(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStdout []string // substrings of stdout
		wantStderr []string // substrings of stderr
	}{
		{
			name:       "the example tests pass",
			args:       []string{"test", "../examples/rules_test.yaml"},
			want:       cli.ExitOK,
			wantStdout: []string{"PASS ../examples/rules_test.yaml: a steady leak is caught", "13 passed, 0 failed\n"},
		},
		{
			name:       "the example leak tests pass",
			args:       []string{"test", "../examples/leaks_test.yaml"},
			want:       cli.ExitOK,
			wantStdout: []string{"PASS ../examples/leaks_test.yaml: a leak in blocks once an epoch is caught", "5 passed, 0 failed\n"},
		},
		{
			name: "a failing test",
			args: []string{"test", "testdata/failing_test.yaml"},
			want: cli.ExitUser,
			wantStdout: []string{
				"FAIL testdata/failing_test.yaml: near-full fires at once\n",
				"    at 15m0s: GPUMemoryNearFull on gpu 0: want firing, got inactive\n",
				"PASS testdata/failing_test.yaml: near-full fires after 90 seconds\n",
				"1 passed, 1 failed\n",
			},
			wantStderr: []string{"1 of 2 tests failed"},
		},
		{
			name:       "a broken test file",
			args:       []string{"test", "testdata/broken_test.yaml"},
			want:       cli.ExitUser,
			wantStdout: []string{"0 passed, 0 failed\n"},
			wantStderr: []string{
				`testdata/broken_test.yaml:6:9: input metric "memory.usd" is not one of`,
				`(did you mean "memory.used"?)`,
				`testdata/broken_test.yaml:11:17: values: "80Wx3": unit "W" does not fit`,
			},
		},
		{
			name:       "several files",
			args:       []string{"test", "../examples/rules_test.yaml", "testdata/failing_test.yaml"},
			want:       cli.ExitUser,
			wantStdout: []string{"14 passed, 1 failed\n"},
		},
		{
			name:       "a missing file",
			args:       []string{"test", "testdata/no-such_test.yaml"},
			want:       cli.ExitRuntime, // an I/O failure
			wantStderr: []string{"no-such_test.yaml: no such file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gpuwatch(t, tt.args...)
			if got.code != tt.want {
				t.Errorf("gpuwatch %v: got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.args, got.code, tt.want, got.stdout, got.stderr)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(got.stdout, w) {
					t.Errorf("gpuwatch %v: got stdout\n%s\nwant it to contain %q", tt.args, got.stdout, w)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("gpuwatch %v: got stderr\n%s\nwant it to contain %q", tt.args, got.stderr, w)
				}
			}
		})
	}
}

// TestTestCommandProblemsArePositioned checks that every problem in a broken
// test file is printed as FILE:LINE:COL: message.
func TestTestCommandProblemsArePositioned(t *testing.T) {
	got := gpuwatch(t, "test", "testdata/broken_test.yaml")
	re := regexp.MustCompile(`^testdata/broken_test\.yaml:\d+:\d+: \S`)
	n := 0
	for line := range strings.Lines(got.stderr) {
		if strings.HasPrefix(line, "gpuwatch: ") {
			continue
		}
		n++
		if !re.MatchString(line) {
			t.Errorf("test on a broken file: got stderr line %q, want FILE:LINE:COL: message", line)
		}
	}
	if n != 2 {
		t.Errorf("test on a broken file: got %d problems, want 2:\n%s", n, got.stderr)
	}
}
