package cli

import (
	"runtime/debug"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	checkout := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/gpuwatch/gpuwatch", Version: "v0.0.0-20261130090000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-30T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string // the -ldflags -X values
		want                  string
	}{
		{name: "no build information", want: "gpuwatch devel"},
		{name: "go run", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "gpuwatch devel"},
		{name: "go install @version", bi: &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, want: "gpuwatch v1.2.3"},
		{name: "go build in a checkout", bi: checkout,
			want: "gpuwatch v0.0.0-20261130090000-0123456789ab (commit 0123456789ab with local changes, 2026-11-30T09:00:00Z)"},
		{name: "a release build", bi: checkout, version: "v1.2.3", commit: "fedcba9876543210", date: "2026-12-01T10:00:00Z",
			want: "gpuwatch v1.2.3 (commit fedcba987654, 2026-12-01T10:00:00Z)"},
		{name: "only the version set", bi: &debug.BuildInfo{}, version: "v1.2.3", want: "gpuwatch v1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildInfo(tt.bi, tt.version, tt.commit, tt.date).String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
