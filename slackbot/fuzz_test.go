package slackbot

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseCommand checks that no text panics the parser and that what it
// accepts is within the documented limits.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"", "status", "top public", "alerts", "history 0 6h", "history gpu3 1d", "silence GPUHot 2h fan",
		"silence gpu 2 30m", "silence all 1w", "silences", "unsilence abc", "help", "dance", "silence 2h",
		"history 0 48h", "\xff", "silence GPUHot 9999w9999d2562047h", "digest", "digest 7d public", "digest 36d",
		"status node1", "free", "free gpu-b.example.org public", "top [::1]:9400", "alerts node3", "history node1 0 6h",
		"history gpu1 2", "history gpu1 2h", "history", "history node1", "history 6h 0", "history 0 1h x", "history 2h 3h node1",
		"silence gpu 2 on node3 1h reboot", "silence all ON node3 1d", "silence on on x 1h",
		"mine", "mine public", "mute-me", "mute-me 8h", "mute-me off", "mute-me 8d", "digest off", "digest WEEKLY public", "muteme 1w",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseCommand(text)
		if c.Host != "" && checkHost(c.Host, "") != nil || c.Target.Host != "" && checkHost(c.Target.Host, "") != nil {
			t.Fatalf("ParseCommand(%q): got hosts %q and %q, want host names", text, c.Host, c.Target.Host)
		}
		if c.Host != "" && c.Kind != CmdStatus && c.Kind != CmdTop && c.Kind != CmdAlerts && c.Kind != CmdFree && c.Kind != CmdHistory {
			t.Fatalf("ParseCommand(%q): got host %q on %s, which takes none", text, c.Host, c.Kind)
		}
		if err != nil {
			if c.Kind != CmdHelp {
				t.Fatalf("ParseCommand(%q): got kind %s with error %v, want help", text, c.Kind, err)
			}
			if err.Error() == "" {
				t.Fatalf("ParseCommand(%q): empty error", text)
			}
			return
		}
		switch c.Kind {
		case CmdHistory:
			if c.Window < 60e9 || c.Window > MaxHistoryWindow || c.GPU < AllGPUs {
				t.Fatalf("ParseCommand(%q): got history %+v out of range", text, c)
			}
			if c.HostOrGPU != "" && (c.Host != "" || checkHost(c.HostOrGPU, "") != nil) {
				t.Fatalf("ParseCommand(%q): got host-or-GPU %q beside host %q", text, c.HostOrGPU, c.Host)
			}
		case CmdSilence:
			if c.Duration <= 0 || c.Duration > MaxSilenceDuration || c.Target.GPU < 0 {
				t.Fatalf("ParseCommand(%q): got silence %+v out of range", text, c)
			}
			if _, err := targetMatchers(c.Target); err != nil {
				t.Fatalf("ParseCommand(%q): accepted a target that makes no matcher: %v", text, err)
			}
			if !utf8.ValidString(c.Reason) {
				t.Fatalf("ParseCommand(%q): invalid UTF-8 reason", text)
			}
		case CmdDigest:
			if c.Window < time.Hour || c.Window > MaxDigestWindow {
				t.Fatalf("ParseCommand(%q): got digest window %v out of range", text, c.Window)
			}
		case CmdMuteMe:
			if c.Duration < 0 || c.Duration > MaxMute {
				t.Fatalf("ParseCommand(%q): got mute %v out of range", text, c.Duration)
			}
		case CmdDigestChoice:
			if c.Choice != "weekly" && c.Choice != "daily" && c.Choice != "off" {
				t.Fatalf("ParseCommand(%q): got digest choice %q", text, c.Choice)
			}
		case CmdUnsilence:
			if c.SilenceID == "" || strings.ContainsAny(c.SilenceID, " \t\n") {
				t.Fatalf("ParseCommand(%q): got silence ID %q", text, c.SilenceID)
			}
		}
	})
}
