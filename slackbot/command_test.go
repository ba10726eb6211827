package slackbot

import (
	"strings"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	cases := []struct {
		text string
		want Command
	}{
		{"", Command{Kind: CmdStatus}},
		{"   ", Command{Kind: CmdStatus}},
		{"status", Command{Kind: CmdStatus}},
		{"STATUS public", Command{Kind: CmdStatus, Public: true}},
		{"public", Command{Kind: CmdStatus, Public: true}},
		{"top", Command{Kind: CmdTop}},
		{"Public top", Command{Kind: CmdTop, Public: true}},
		{"alerts", Command{Kind: CmdAlerts}},
		{"help", Command{Kind: CmdHelp}},
		{"help me please", Command{Kind: CmdHelp}},
		{"history", Command{Kind: CmdHistory, GPU: AllGPUs, Window: 6 * time.Hour}},
		{"history 0", Command{Kind: CmdHistory, GPU: 0, Window: 6 * time.Hour}},
		{"history 12h", Command{Kind: CmdHistory, GPU: AllGPUs, Window: 12 * time.Hour}},
		{"history node1", Command{Kind: CmdHistory, Host: "node1", GPU: AllGPUs, Window: 6 * time.Hour}},
		{"history node1 30m", Command{Kind: CmdHistory, Host: "node1", GPU: AllGPUs, Window: 30 * time.Minute}},
		{"history gpu3 6h", Command{Kind: CmdHistory, GPU: 3, Window: 6 * time.Hour, HostOrGPU: "gpu3"}},
		{"history 1 24h public", Command{Kind: CmdHistory, GPU: 1, Window: 24 * time.Hour, Public: true}},
		{"history 1 1d", Command{Kind: CmdHistory, GPU: 1, Window: 24 * time.Hour}},
		{"silence GPUHot 2h fan repair", Command{Kind: CmdSilence, Target: SilenceTarget{Alert: "GPUHot"}, Duration: 2 * time.Hour, Reason: "fan repair"}},
		{"silence gpu 3 30m", Command{Kind: CmdSilence, Target: SilenceTarget{GPU: 3}, Duration: 30 * time.Minute}},
		{"silence GPU2 1d12h", Command{Kind: CmdSilence, Target: SilenceTarget{GPU: 2}, Duration: 36 * time.Hour}},
		{"silence all 1w maintenance window", Command{Kind: CmdSilence, Target: SilenceTarget{All: true}, Duration: 7 * 24 * time.Hour, Reason: "maintenance window"}},
		{"silences", Command{Kind: CmdSilences}},
		{"unsilence abc123", Command{Kind: CmdUnsilence, SilenceID: "abc123"}},
		{"digest", Command{Kind: CmdDigest, Window: 24 * time.Hour}},
		{"DIGEST 7d public", Command{Kind: CmdDigest, Window: 7 * 24 * time.Hour, Public: true}},
		{"digest off", Command{Kind: CmdDigestChoice, Choice: "off"}},
		{"digest Weekly", Command{Kind: CmdDigestChoice, Choice: "weekly"}},
		{"digest daily", Command{Kind: CmdDigestChoice, Choice: "daily"}},
		{"mine", Command{Kind: CmdMine}},
		{"mine public", Command{Kind: CmdMine, Public: true}},
		{"mute-me", Command{Kind: CmdMuteMe, Duration: 8 * time.Hour}},
		{"mute-me 2h", Command{Kind: CmdMuteMe, Duration: 2 * time.Hour}},
		{"mute-me off", Command{Kind: CmdMuteMe}},
		{"digest 1h", Command{Kind: CmdDigest, Window: time.Hour}},
		{"digest 35d", Command{Kind: CmdDigest, Window: 35 * 24 * time.Hour}},
		{"status node1", Command{Kind: CmdStatus, Host: "node1"}},
		{"status 10.0.0.7:9400 public", Command{Kind: CmdStatus, Host: "10.0.0.7:9400", Public: true}},
		{"top gpu-b.example.org", Command{Kind: CmdTop, Host: "gpu-b.example.org"}},
		{"alerts node_3", Command{Kind: CmdAlerts, Host: "node_3"}},
		{"free", Command{Kind: CmdFree}},
		{"FREE [::1]:9400", Command{Kind: CmdFree, Host: "[::1]:9400"}},
		{"history node1 0", Command{Kind: CmdHistory, Host: "node1", GPU: 0, Window: 6 * time.Hour}},
		{"history node1 gpu3 6h", Command{Kind: CmdHistory, Host: "node1", GPU: 3, Window: 6 * time.Hour}},
		// A host named like a GPU ("gpu1", a common server name) is a host
		// when a GPU follows it, else the GPU, kept as a host the answer
		// may find.
		{"history gpu1 2", Command{Kind: CmdHistory, Host: "gpu1", GPU: 2, Window: 6 * time.Hour}},
		{"history gpu1 2h", Command{Kind: CmdHistory, GPU: 1, Window: 2 * time.Hour, HostOrGPU: "gpu1"}},
		{"silence gpu 2 on node3 1h reboot", Command{Kind: CmdSilence, Target: SilenceTarget{GPU: 2, Host: "node3"}, Duration: time.Hour, Reason: "reboot"}},
		{"silence GPUHot ON node3 2h", Command{Kind: CmdSilence, Target: SilenceTarget{Alert: "GPUHot", Host: "node3"}, Duration: 2 * time.Hour}},
		{"silence all on node3 1d", Command{Kind: CmdSilence, Target: SilenceTarget{All: true, Host: "node3"}, Duration: 24 * time.Hour}},
		{"silence on 1h", Command{Kind: CmdSilence, Target: SilenceTarget{Alert: "on"}, Duration: time.Hour}},
	}
	for _, c := range cases {
		got, err := ParseCommand(c.text)
		if err != nil {
			t.Errorf("ParseCommand(%q): got error %v, want %+v", c.text, err, c.want)
			continue
		}
		if got != c.want {
			t.Errorf("ParseCommand(%q): got %+v, want %+v", c.text, got, c.want)
		}
	}
}

func TestParseCommandErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"dance", `"dance" is not a /gpu command`},
		{"status node1 now", "takes at most a host"},
		{"status node/1", `"node/1" is not a host name`},
		{"free a b", "/gpu free takes at most a host"},
		{"top <!channel>", "is not a host name"},
		{"silences now", "takes nothing after it"},
		{"history node1 x", `"x" after host node1 is not a GPU index (0, 1, …) or a window (6h)`},
		{"history node1 0 soon", `history window: "soon" is not a duration`},
		{"history node1 0 6h extra", "takes at most a host, a GPU and a window"},
		{"history no/de 0", "is not a host name"},
		{"history 6h 0", "the window goes last: write /gpu history 0 6h"},
		{"history 6h node1 2", "the window goes last: write /gpu history node1 2 6h"},
		{"history 0 1", "one GPU, or every GPU of a host: got GPUs 0 and 1"},
		{"history 0 node1", `history window: "node1" is not a duration`},
		{"history 0 node1 6h", "the host goes before the GPU: write /gpu history node1 0"},
		{"history 2h 3h", "takes one window, got 2h and 3h"},
		{"silence gpu 2 on", "on needs a host"},
		{"silence gpu 2 on node1", "needs a duration after gpu 2 on node1"},
		{"silence all on a/b 1h", "is not a host name"},
		{"history x!", `"x!" is not a host name`},
		{"history 0 48h", "out of range"},
		{"history 0 10s", "out of range"},
		{"history 0 soon", `"soon" is not a duration`},
		{"history 0 1h extra", `nothing goes after the window, got "extra": write /gpu history 0 1h`},
		{"silence", "needs what to silence"},
		{"digest 30m", "digest window 30m is out of range"},
		{"digest hourly", `digest window: "hourly" is not a duration`},
		{"mine all", "/gpu mine takes nothing after it"},
		{"mute-me 8d", "mute-me duration 8d is too long: at most 7d"},
		{"mute-me 1h now", "/gpu mute-me takes at most a duration"},
		{"mute-me never", `mute-me duration: "never" is not a duration`},
		{"digest 36d", "out of range: use 1h to 35d"},
		{"digest soon", `"soon" is not a duration`},
		{"digest 1d 2d", "at most a window"},
		{"silence 2h", "say what to silence before the duration"},
		{"silence GPUHot", "needs a duration after GPUHot"},
		{"silence gpu", "gpu needs its index"},
		{"silence gpu x 1h", `"x" is not a GPU index`},
		{"silence GPUHot forever", `"forever" is not a duration`},
		{"silence GPUHot -1h", "is not a duration"},
		{"silence GPUHot 0s", "not a positive duration"},
		{"silence GPUHot 400d", "too long"},
		{`silence a"b 1h`, "not an alert name"},
		{"unsilence", "needs one silence ID"},
		{"unsilence a b", "needs one silence ID"},
		{"status \xff", "not valid UTF-8"},
		{strings.Repeat("x", 5000), "the longest /gpu takes is 4000"},
	}
	for _, c := range cases {
		got, err := ParseCommand(c.text)
		if err == nil {
			t.Errorf("ParseCommand(%q): got %+v, want an error containing %q", c.text, got, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCommand(%q): got error %q, want it to contain %q", c.text, err, c.want)
		}
		if got.Kind != CmdHelp {
			t.Errorf("ParseCommand(%q): got kind %s on error, want help", c.text, got.Kind)
		}
	}
}

func TestParseCommandPublicSurvivesErrors(t *testing.T) {
	got, err := ParseCommand("public dance")
	if err == nil || !got.Public {
		t.Errorf(`ParseCommand("public dance"): got %+v, %v; want public help and an error`, got, err)
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"30m", 30 * time.Minute}, {"2h", 2 * time.Hour}, {"1h30m", 90 * time.Minute},
		{"2d", 48 * time.Hour}, {"1w", 168 * time.Hour}, {"1w1d", 192 * time.Hour}, {"1D", 24 * time.Hour},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q): got %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "d", "1x", "-2h", "2d1w", "h1", "99999999999h", "9999w9999d2562047h"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q): got %v, want an error", bad, got)
		}
	}
}
