package digest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/internal/blockkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenReport is the fixed report the golden files show: a day of two
// GPUs and four users, priced, in Berlin winter time.
func goldenReport() *Report {
	h := sampleHours(24, 2, 4)
	return Build(h.gpus, h.users, h.alerts, Options{Name: "daily", Host: "node1", From: hour(0), To: hour(24),
		TopUsers: 3, PricePerKWh: 0.30, Currency: "EUR", Location: time.FixedZone("CET", 3600)})
}

func TestGolden(t *testing.T) {
	r := goldenReport()
	blocks, err := r.Blocks()
	if err != nil {
		t.Fatalf("Blocks: %v", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, blocks, "", "  "); err != nil {
		t.Fatalf("blocks are not JSON: %v", err)
	}
	indented.WriteByte('\n')
	tests := []struct {
		file string
		got  []byte
	}{
		{"report.txt", []byte(r.Text())},
		{"report.md", []byte(r.Markdown())},
		{"blocks.json", indented.Bytes()},
	}
	for _, tt := range tests {
		path := filepath.Join("testdata", "golden", tt.file)
		if *update {
			if err := os.WriteFile(path, tt.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./digest -run TestGolden -update to write it)", err)
		}
		if !bytes.Equal(tt.got, want) {
			t.Errorf("%s: got\n%s\nwant\n%s\n(if the change is intended, rerun with -update)", tt.file, tt.got, want)
		}
	}
}

func TestReadingOrder(t *testing.T) {
	r := goldenReport()
	for name, out := range map[string]string{"text": r.Text(), "markdown": r.Markdown()} {
		last := -1
		for _, part := range []string{r.Title(), "average utilization", "GPU 0", "Top users", "Held idle", "Alerts"} {
			i := strings.Index(out, part)
			if i <= last {
				t.Errorf("%s: %q at %d, want it after the previous part (at %d)", name, part, i, last)
			}
			last = i
		}
		if !strings.Contains(out, "held 20 GiB on GPU 1 idle for 13h00m") {
			t.Errorf("%s: want an idle-holder line %q in\n%s", name, "… held 20 GiB on GPU 1 idle for 13h00m", out)
		}
	}
}

func TestBlocksFitSlack(t *testing.T) {
	tests := []struct {
		name  string
		gpus  int
		users int
	}{
		{"a day, 2 GPUs", 2, 4},
		{"a huge host", 400, 20},
		{"nothing", 0, 0},
	}
	for _, tt := range tests {
		h := sampleHours(24, tt.gpus, tt.users)
		raw, err := Build(h.gpus, h.users, h.alerts, Options{Host: strings.Repeat("very-long-host-name-", 10)}).Blocks()
		if err != nil {
			t.Fatalf("%s: Blocks: %v", tt.name, err)
		}
		var blocks []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		}
		if err := json.Unmarshal(raw, &blocks); err != nil {
			t.Fatalf("%s: blocks are not a JSON array: %v", tt.name, err)
		}
		if len(blocks) > maxBlocks || len(blocks) < 3 {
			t.Errorf("%s: got %d blocks, want 3 to %d", tt.name, len(blocks), maxBlocks)
		}
		for i, b := range blocks {
			limit := maxSectionText
			if b.Type == "header" {
				limit = maxHeaderText
			}
			if n := len(b.Text.Text); n > limit {
				t.Errorf("%s: block %d (%s) has %d bytes of text, want at most %d", tt.name, i, b.Type, n, limit)
			}
		}
	}
}

// TestBlocksEscapeOutsideText checks that names from outside (a user
// called "<!channel>", a GPU name with &) are escaped in Slack's mrkdwn,
// left as they are in text, and that the blocks pass Slack's limits.
func TestBlocksEscapeOutsideText(t *testing.T) {
	h := sampleHours(24, 2, 1)
	for i := range h.users {
		h.users[i].User = "<!channel> & <@U0123>"
	}
	for i := range h.gpus {
		h.gpus[i].Name = "A100 <b>&</b>"
	}
	for i := range h.alerts {
		h.alerts[i].Alert = "GPU<Hot>"
	}
	r := Build(h.gpus, h.users, h.alerts, Options{Host: "node1", From: hour(0), To: hour(24)})
	raw, err := r.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	var blocks goslack.Blocks
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatal(err)
	}
	if err := blockkit.Validate(blocks.BlockSet); err != nil {
		t.Errorf("the digest's blocks break Slack's limits: %v", err)
	}
	var text strings.Builder
	for _, b := range blocks.BlockSet {
		if s, ok := b.(*goslack.SectionBlock); ok && s.Text != nil {
			text.WriteString(s.Text.Text + "\n")
		}
	}
	got := text.String()
	for _, want := range []string{"&lt;!channel&gt; &amp; &lt;@U0123&gt;", "A100 &lt;b&gt;&amp;&lt;/b&gt;", "GPU&lt;Hot&gt;"} {
		if !strings.Contains(got, want) {
			t.Errorf("blocks: want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "<!channel>") {
		t.Errorf("blocks: got an unescaped <!channel> in\n%s", got)
	}
	if !strings.Contains(r.Text(), "<!channel> & <@U0123>") {
		t.Errorf("text: want the user's name as it is in\n%s", r.Text())
	}
}

func TestFormats(t *testing.T) {
	durations := []struct {
		secs float64
		want string
	}{
		{0, "0s"}, {45, "45s"}, {12 * 60, "12m"}, {5*3600 + 12*60, "5h12m"}, {3600, "1h00m"}, {2*86400 + 5*3600 + 59, "2d5h"},
	}
	for _, tt := range durations {
		if got := duration(tt.secs); got != tt.want {
			t.Errorf("duration(%v): got %q, want %q", tt.secs, got, tt.want)
		}
	}
	sizes := []struct {
		v    uint64
		want string
	}{
		// As gpuwatch status and alerts write them: an H100's 81559 MiB is
		// 79.6 GiB, not 80.
		{20 * gib, "20 GiB"}, {gib + gib/2, "1.5 GiB"}, {512 << 20, "512 MiB"}, {0, "0 B"}, {81559 << 20, "79.6 GiB"},
	}
	for _, tt := range sizes {
		if got := formatBytes(tt.v); got != tt.want {
			t.Errorf("bytes(%d): got %q, want %q", tt.v, got, tt.want)
		}
	}
	// Hours that a short window has do not read as none beside their share.
	spans := []struct {
		h                float64
		busy, gpu, hours string
	}{
		{0, "0h", "0.0 GPU-hours", "0.0"},
		{5.0 / 3600, "5s", "under a GPU-minute", "0.0014"},
		{1.0 / 60, "1m", "1 GPU-minute", "0.017"},
		{2.0 / 60, "2m", "2 GPU-minutes", "0.033"},
		{0.5, "30m", "30 GPU-minutes", "0.5"},
		{1.55, "1.6h", "1.6 GPU-hours", "1.6"},
		{150, "150h", "150 GPU-hours", "150"},
	}
	for _, tt := range spans {
		if got := busyTime(tt.h); got != tt.busy {
			t.Errorf("busyTime(%v): got %q, want %q", tt.h, got, tt.busy)
		}
		if got := gpuTime(tt.h); got != tt.gpu {
			t.Errorf("gpuTime(%v): got %q, want %q", tt.h, got, tt.gpu)
		}
		if got := hours(tt.h); got != tt.hours {
			t.Errorf("hours(%v): got %q, want %q", tt.h, got, tt.hours)
		}
	}
	if got, want := cut("ab▁▂▃", 7), "ab…"; got != want {
		t.Errorf("cut: got %q, want %q (never half a rune)", got, want)
	}
}

func BenchmarkRender30Days8GPUs20Users(b *testing.B) {
	h := sampleHours(30*24, 8, 20)
	o := Options{Name: "monthly", Host: "node1", From: hour(0), To: hour(30 * 24), PricePerKWh: 0.3, Currency: "EUR"}
	b.ReportAllocs()
	for b.Loop() {
		r := Build(h.gpus, h.users, h.alerts, o)
		_, _ = r.Text(), r.Markdown()
		if _, err := r.Blocks(); err != nil {
			b.Fatal(err)
		}
	}
}
