package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultStorage returns where the store goes when storage.path is not
// set: DefaultStoragePath when this process may write there (root, or the
// gpuwatch service, whose systemd unit makes the folder), else
// gpuwatch/gpuwatch.db under $XDG_STATE_HOME, or under ~/.local/state when
// that is not set, so a normal user can try `gpuwatch run` without root.
// lookup reads the environment (os.LookupEnv). It only looks: it creates
// nothing, so commands that merely read a config leave no state behind.
func DefaultStorage(lookup func(string) (string, bool)) string {
	return defaultStorage(lookup, mayCreateIn)
}

// defaultStorage is DefaultStorage with the test of whether this process
// may make files in a folder (existing or to be made) as a parameter.
func defaultStorage(lookup func(string) (string, bool), mayCreate func(dir string) bool) string {
	if mayCreate(filepath.Dir(DefaultStoragePath)) {
		return DefaultStoragePath
	}
	// The XDG base directory spec: a relative $XDG_STATE_HOME is invalid
	// and ignored.
	if state, ok := lookup("XDG_STATE_HOME"); ok && filepath.IsAbs(state) {
		return filepath.Join(state, "gpuwatch", "gpuwatch.db")
	}
	if home, ok := lookup("HOME"); ok && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "gpuwatch", "gpuwatch.db")
	}
	// Nowhere better: opening the store will say why it cannot.
	return DefaultStoragePath
}

// mayCreateIn reports whether this process may make files in dir: dir is
// writable, or it does not exist and the nearest folder above it that does
// is writable (the store makes the folders it lacks). access(2) answers
// for the process's real ids and sees read-only mounts, such as the ones
// ProtectSystem=strict makes.
func mayCreateIn(dir string) bool {
	for {
		err := syscall.Access(dir, accessWrite)
		if !errors.Is(err, fs.ErrNotExist) {
			return err == nil && isDir(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// accessWrite is access(2)'s W_OK, the same number on every Unix.
const accessWrite = 0x2

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
