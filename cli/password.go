package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func hashPasswordCommand(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "hash-password", "[--cost N] [USER]", `
Makes the bcrypt hash of a password, for server.basic_auth_users. The
password comes from the terminal, asked twice and not shown, or, when
standard input is not a terminal, from its first line: never from the
command line, where the machine's other users (ps) and the shell's
history would keep it. With USER it prints the line to put under
basic_auth_users ("alice: $2a$10$…"), else the hash alone.`)
	cost := fs.Int("cost", bcrypt.DefaultCost, fmt.Sprintf("bcrypt's cost: each step doubles the work of a login and of a guess (%d to %d)", bcrypt.DefaultCost, maxPasswordCost))
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if len(args) > 1 {
		return usageErrf("hash-password takes a user at most, never the password: it asks for it, or reads it from standard input (see gpuwatch hash-password --help)")
	}
	if *cost < bcrypt.DefaultCost || *cost > maxPasswordCost {
		return usageErrf("hash-password: --cost %d: give %d to %d", *cost, bcrypt.DefaultCost, maxPasswordCost)
	}
	user := ""
	if len(args) == 1 {
		user = args[0]
		if strings.ContainsAny(user, ": \t\n") || strings.HasPrefix(user, "-") {
			return usageErrf("hash-password: %q is no user name basic_auth_users can hold: a word without spaces or colons", user)
		}
	}
	password, err := readPassword(env, user)
	if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), *cost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return userErrf("hash-password: the password is longer than bcrypt's 72 bytes: bcrypt would ignore the rest; choose a shorter one")
	}
	if err != nil {
		return fmt.Errorf("hash-password: %w", err)
	}
	if user != "" {
		fmt.Fprintf(env.Stdout, "%s: %s\n", user, hash)
	} else {
		fmt.Fprintf(env.Stdout, "%s\n", hash)
	}
	return nil
}

// maxPasswordCost bounds --cost: at 16 a login already takes seconds.
const maxPasswordCost = 16

// readPassword reads the password: from the terminal, asked twice without
// echo, or from the first line of standard input.
func readPassword(env *Env, user string) (string, error) {
	if f, ok := env.Stdin.(*os.File); ok && isTerminal(f) {
		whose := "the password"
		if user != "" {
			whose = user + "'s password"
		}
		first, err := readHidden(f, env.Stderr, "Type "+whose+": ")
		if err != nil {
			return "", fmt.Errorf("hash-password: read the password: %w", err)
		}
		if first == "" {
			return "", userErrf("hash-password: the password is empty")
		}
		again, err := readHidden(f, env.Stderr, "Type it again: ")
		if err != nil {
			return "", fmt.Errorf("hash-password: read the password: %w", err)
		}
		if again != first {
			return "", userErrf("hash-password: the two passwords differ: nothing was hashed, try again")
		}
		return first, nil
	}
	if env.Stdin == nil {
		return "", userErrf("hash-password: no password: type it at a terminal, or give it on standard input")
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("hash-password: read the password from standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", userErrf("hash-password: standard input holds no password: give it on its first line (printf '%%s\\n' \"$PASSWORD\" | gpuwatch hash-password)")
	}
	return line, nil
}

// readHidden writes prompt to w and reads a line from the terminal f
// with its echo off, restoring the terminal after.
func readHidden(f *os.File, w io.Writer, prompt string) (string, error) {
	fmt.Fprint(w, prompt)
	defer fmt.Fprintln(w)
	restore, err := echoOff(f)
	if err != nil {
		return "", err
	}
	defer restore()
	var line []byte
	buf := make([]byte, 1)
	for {
		n, err := f.Read(buf)
		if n == 1 {
			if buf[0] == '\n' || buf[0] == '\r' {
				return string(line), nil
			}
			line = append(line, buf[0])
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return string(line), nil
			}
			return "", err
		}
	}
}
