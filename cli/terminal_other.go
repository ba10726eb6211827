//go:build !linux

package cli

import (
	"errors"
	"os"
)

// isTerminal reports whether f is a terminal; off Linux, gpuwatch reads a
// password from standard input alone.
func isTerminal(*os.File) bool { return false }

func echoOff(*os.File) (func(), error) {
	return nil, errors.New("no terminal control on this system")
}
