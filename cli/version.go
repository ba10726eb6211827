package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// The build's version, commit and date. Release builds set them:
//
//	go build -ldflags "-X github.com/gpuwatch/gpuwatch/cli.Version=v1.2.3
//	  -X github.com/gpuwatch/gpuwatch/cli.Commit=$(git rev-parse HEAD)
//	  -X github.com/gpuwatch/gpuwatch/cli.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/gpuwatch
//
// What they leave empty comes from the build information Go stamps into
// the binary (the module version of `go install …@v1.2.3`, the git commit
// and time of a `go build` in a checkout).
var (
	Version string
	Commit  string
	Date    string
)

// BuildInfo is what `gpuwatch version` prints and gpuwatch_build_info
// shows.
type BuildInfo struct {
	Version  string // "v1.2.3", a pseudo-version, or "devel"
	Commit   string // the git commit; "" when unknown
	Date     string // when the commit was made or the binary built; "" when unknown
	Modified bool   // built from a checkout with uncommitted changes
}

// String is the one line `gpuwatch version` prints: "gpuwatch v1.2.3
// (commit 0123abcd, 2026-11-30T09:00:00Z)".
func (b BuildInfo) String() string {
	s := "gpuwatch " + b.Version
	var details []string
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += " with local changes"
		}
		details = append(details, "commit "+c)
	}
	if b.Date != "" {
		details = append(details, b.Date)
	}
	if len(details) > 0 {
		s += " (" + strings.Join(details, ", ") + ")"
	}
	return s
}

// Build returns this binary's version, commit and date: the values set
// with -ldflags -X, and the binary's build information for the others.
func Build() BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfo(bi, Version, Commit, Date)
}

// buildInfo merges the -X values with Go's build information (nil when the
// binary has none).
func buildInfo(bi *debug.BuildInfo, version, commit, date string) BuildInfo {
	out := BuildInfo{Version: version, Commit: commit, Date: date}
	if bi != nil {
		if out.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			out.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if out.Commit == "" {
					out.Commit = s.Value
				}
			case "vcs.time":
				if out.Date == "" {
					out.Date = s.Value
				}
			case "vcs.modified":
				out.Modified = commit == "" && s.Value == "true"
			}
		}
	}
	// A pseudo-version ending in +dirty says the same as Modified.
	if v, ok := strings.CutSuffix(out.Version, "+dirty"); ok {
		out.Version, out.Modified = v, out.Modified || commit == ""
	}
	if out.Version == "" {
		out.Version = "devel"
	}
	return out
}

func versionCommand(env *Env, args []string) error {
	fs := newFlags(env, "version", "", "Prints gpuwatch's version, the git commit it was built from and when.")
	args, err := parseFlags(env, fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("version", args); err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, Build())
	return err
}
