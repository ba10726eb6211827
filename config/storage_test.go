package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultStorage(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	}
	system := func(dir string) bool { return dir == "/var/lib/gpuwatch" }
	user := func(string) bool { return false }
	for _, tc := range []struct {
		name      string
		mayCreate func(string) bool
		env       map[string]string
		want      string
	}{
		{"root or the service", system, map[string]string{"XDG_STATE_HOME": "/home/ana/.state", "HOME": "/home/ana"}, DefaultStoragePath},
		{"a user with XDG_STATE_HOME", user, map[string]string{"XDG_STATE_HOME": "/home/ana/.state", "HOME": "/home/ana"}, "/home/ana/.state/gpuwatch/gpuwatch.db"},
		{"a user without XDG_STATE_HOME", user, map[string]string{"HOME": "/home/ana"}, "/home/ana/.local/state/gpuwatch/gpuwatch.db"},
		{"a relative XDG_STATE_HOME is ignored", user, map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/ana"}, "/home/ana/.local/state/gpuwatch/gpuwatch.db"},
		{"no home at all", user, map[string]string{}, DefaultStoragePath},
	} {
		if got := defaultStorage(env(tc.env), tc.mayCreate); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMayCreateIn checks the test DefaultStorage makes on real folders:
// a folder not yet made counts as its nearest existing parent, and the
// test makes nothing.
func TestMayCreateIn(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "a", "b")
	if !mayCreateIn(dir) || !mayCreateIn(missing) {
		t.Errorf("mayCreateIn(%s), mayCreateIn(%s): got false, want true", dir, missing)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Errorf("mayCreateIn made %s", filepath.Join(dir, "a"))
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if mayCreateIn(file) || mayCreateIn(filepath.Join(file, "sub")) {
		t.Errorf("mayCreateIn of a file, or of a folder below one: got true, want false")
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if mayCreateIn(ro) || mayCreateIn(filepath.Join(ro, "gpuwatch")) {
			t.Errorf("mayCreateIn of a read-only folder: got true, want false")
		}
	}
}
