package cli_test

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// cacheBinary reads the file at path whole into the page cache (in) or
// leaves none of it there: either way it is dropped from the cache first
// (written back, then let go), so that the cache holds what the read put
// there and nothing that the build wrote.
func cacheBinary(b *testing.B, path string, in bool) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err = f.Sync(); err == nil {
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	if err == nil && in {
		_, err = io.Copy(io.Discard, f)
	}
	if err != nil {
		b.Fatalf("page cache of %s: %v", path, err)
	}
}
