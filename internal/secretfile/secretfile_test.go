package secretfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file, big, fifo := filepath.Join(dir, "token"), filepath.Join(dir, "big"), filepath.Join(dir, "fifo")
	os.WriteFile(file, []byte("t0ken\n"), 0o600)
	os.WriteFile(big, make([]byte, 100), 0o600)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(file, 10); err != nil || string(got) != "t0ken\n" {
		t.Errorf("Read(token): got %q, %v, want its text", got, err)
	}
	for path, want := range map[string]string{
		big:                           big + " has 100 bytes, more than the 10 it may have",
		fifo:                          fifo + " is not a regular file", // and no hang
		dir:                           dir + " is not a regular file",
		filepath.Join(dir, "nothing"): "open " + filepath.Join(dir, "nothing") + ": no such file or directory",
	} {
		if _, err := Read(path, 10); err == nil || err.Error() != want {
			t.Errorf("Read(%s): got %v, want %q", path, err, want)
		}
	}
}
