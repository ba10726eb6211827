package slackbot

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDigestCommand(t *testing.T) {
	ta := newTestApp(t, 4, nil)
	k := ta.run(t, "digest", "U1", "alice")
	if k.ResponseType != ephemeral {
		t.Errorf("got response type %q, want %q", k.ResponseType, ephemeral)
	}
	if want := "GPU usage on node1, last 24h0m0s"; k.Text != want {
		t.Errorf("got text %q, want the title %q", k.Text, want)
	}
	contains(t, "header", strings.Join(k.texts("header"), ""), "GPU usage on node1, last 24h0m0s")
	contains(t, "section", strings.Join(k.texts("section"), ""), "*alice* 20.5 GPU-hours")

	k = ta.run(t, "digest 7d public", "U1", "alice")
	if k.ResponseType != inChannel {
		t.Errorf("public: got response type %q, want %q", k.ResponseType, inChannel)
	}
	contains(t, "header", strings.Join(k.texts("header"), ""), "last 168h0m0s")
	if want := []time.Duration{24 * time.Hour, 7 * 24 * time.Hour}; !reflect.DeepEqual(ta.b.windows, want) {
		t.Errorf("got windows %v, want %v", ta.b.windows, want)
	}
}

func TestDigestCommandProblems(t *testing.T) {
	many := make([]string, maxBlocks+1)
	for i := range many {
		many[i] = `{"type":"divider"}`
	}
	tests := []struct {
		name   string
		answer func(time.Duration) (string, []byte, error)
		want   string
	}{
		{"backend error", func(time.Duration) (string, []byte, error) {
			return "", nil, errors.New("digests are not set up <!channel>")
		}, "⚠️ No digest of the last 1d: digests are not set up &lt;!channel&gt;."},
		{"blocks not JSON", func(time.Duration) (string, []byte, error) {
			return "t", []byte(`{"type":`), nil
		}, "its blocks are not a JSON array"},
		{"too many blocks", func(time.Duration) (string, []byte, error) {
			return "t", []byte("[" + strings.Join(many, ",") + "]"), nil
		}, fmt.Sprintf("it has %d blocks, more than Slack's %d", maxBlocks+1, maxBlocks)},
		{"no blocks", func(time.Duration) (string, []byte, error) {
			return "", []byte("[]"), nil
		}, "No usage was recorded in this window."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ta := newTestApp(t, 4, nil)
			ta.b.digest = tt.answer
			k := ta.run(t, "digest", "U1", "alice")
			contains(t, "/gpu digest", k.all(), tt.want)
		})
	}
}
