// Package secretfile reads the small files a config names for secrets
// and certificates (token, password, PEM files): regular files only, of a
// bounded size, opened without blocking, so a config that names
// /dev/zero, a log or a named pipe by mistake gets an error, not a hang.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads the regular file at path, of at most max bytes.
func Read(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a named pipe would wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errors.New(path + " is not a regular file")
	case fi.Size() > max:
		return nil, fmt.Errorf("%s has %d bytes, more than the %d it may have", path, fi.Size(), max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
