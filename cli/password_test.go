package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sys/unix"

	"github.com/gpuwatch/gpuwatch/cli"
)

// hashPassword runs gpuwatch hash-password with args and stdin.
func hashPassword(t *testing.T, stdin *os.File, input string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &cli.Env{Stdout: &stdout, Stderr: &stderr, LookupEnv: noEnv}
	if stdin != nil {
		env.Stdin = stdin
	} else {
		env.Stdin = strings.NewReader(input)
	}
	code := cli.Main(context.Background(), append([]string{"hash-password"}, args...), env)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// TestHashPasswordFromStdin: a password on standard input becomes the
// line basic_auth_users takes, which a config then passes check with,
// and the hash is the password's.
func TestHashPasswordFromStdin(t *testing.T) {
	const password = "correct horse battery staple"
	got := hashPassword(t, nil, password+"\n", "alice")
	if got.code != cli.ExitOK || !strings.HasPrefix(got.stdout, "alice: $2a$10$") || got.stderr != "" {
		t.Fatalf("hash-password alice: got %+v, want the line alice: $2a$10$…", got)
	}
	hash := strings.TrimSpace(strings.TrimPrefix(got.stdout, "alice: "))
	if err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)); err != nil {
		t.Errorf("the hash is not the password's: %v", err)
	}
	if strings.Contains(got.stdout, password) {
		t.Errorf("the output holds the password: %q", got.stdout)
	}
	path := filepath.Join(t.TempDir(), "gpuwatch.yaml")
	writeFile(t, path, "server:\n  basic_auth_users:\n    "+strings.TrimSpace(got.stdout)+"\n")
	if check := gpuwatch(t, "check", "--config", path); check.code != cli.ExitOK {
		t.Errorf("check of a config with the line hash-password printed: exit %d\n%s%s", check.code, check.stdout, check.stderr)
	}
	// Without a user, the hash alone; --cost sets bcrypt's cost.
	got = hashPassword(t, nil, password, "--cost", "11")
	if cost, err := bcrypt.Cost([]byte(strings.TrimSpace(got.stdout))); got.code != cli.ExitOK || err != nil || cost != 11 {
		t.Errorf("hash-password --cost 11 without a user: got %+v (cost %d, %v), want a hash of cost 11", got, cost, err)
	}
}

// TestHashPasswordRefuses: a password on the command line, no password,
// one too long for bcrypt, a cost out of range: each said, the password
// never repeated.
func TestHashPasswordRefuses(t *testing.T) {
	long := strings.Repeat("x", 80)
	for _, c := range []struct {
		args  []string
		input string
		code  int
		says  string
	}{
		{[]string{"alice", "hunter2"}, "", cli.ExitUsage, "never the password"},
		{[]string{"alice"}, "", cli.ExitUser, "standard input holds no password"},
		{[]string{"alice"}, "\n", cli.ExitUser, "standard input holds no password"},
		{[]string{"alice"}, long + "\n", cli.ExitUser, "longer than bcrypt's 72 bytes"},
		{[]string{"--cost", "4", "alice"}, "pw\n", cli.ExitUsage, "--cost 4: give 10 to 16"},
		{[]string{"al ice"}, "pw\n", cli.ExitUsage, "no user name"},
	} {
		got := hashPassword(t, nil, c.input, c.args...)
		if got.code != c.code || !strings.Contains(got.stderr, c.says) || got.stdout != "" {
			t.Errorf("hash-password %v with %q on stdin: got %+v, want exit %d saying %q", c.args, c.input, got, c.code, c.says)
		}
		if strings.Contains(got.stderr, "hunter2") || strings.Contains(got.stderr, long) {
			t.Errorf("hash-password %v: the error repeats the password: %q", c.args, got.stderr)
		}
	}
}

// TestHashPasswordFromTerminal: at a terminal, the password is asked
// twice and not shown; two that differ are refused.
func TestHashPasswordFromTerminal(t *testing.T) {
	for _, c := range []struct {
		first, again string
		code         int
	}{
		{"correct horse", "correct horse", cli.ExitOK},
		{"correct horse", "wrong horse", cli.ExitUser},
	} {
		master, tty := openPTY(t)
		var screen bytes.Buffer
		var mu sync.Mutex
		go func() {
			buf := make([]byte, 256)
			for {
				n, err := master.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		shows := func(s string) bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(screen.String(), s)
		}
		done := make(chan result, 1)
		go func() {
			var stdout bytes.Buffer
			code := cli.Main(context.Background(), []string{"hash-password", "alice"}, &cli.Env{Stdin: tty, Stdout: &stdout, Stderr: tty, LookupEnv: noEnv})
			done <- result{code: code, stdout: stdout.String()}
		}()
		for _, step := range []struct{ prompt, typed string }{{"Type alice's password: ", c.first}, {"Type it again: ", c.again}} {
			for deadline := time.Now().Add(10 * time.Second); !shows(step.prompt); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the terminal shows %q, not the prompt %q", screen.String(), step.prompt)
				}
			}
			fmt.Fprintf(master, "%s\n", step.typed)
		}
		got := <-done
		time.Sleep(50 * time.Millisecond)
		if got.code != c.code {
			t.Errorf("typed %q then %q: exit %d, want %d", c.first, c.again, got.code, c.code)
		}
		if c.code == cli.ExitOK && bcrypt.CompareHashAndPassword([]byte(strings.TrimPrefix(strings.TrimSpace(got.stdout), "alice: ")), []byte(c.first)) != nil {
			t.Errorf("typed %q twice: printed %q, not its hash", c.first, got.stdout)
		}
		if shows("horse") {
			t.Errorf("the terminal shows the password as it is typed: %q", screen.String())
		}
		master.Close()
		tty.Close()
	}
}

// openPTY opens a pseudo-terminal: its master side, which plays the
// keyboard and the screen, and its terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, tty
}
