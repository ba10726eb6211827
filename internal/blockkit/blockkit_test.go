package blockkit

import (
	"strings"
	"testing"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"
)

func TestEscapeClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a<b>&`c`", 100, "a&lt;b&gt;&amp;'c'"},
		{"abcdef", 4, "abc…"},
		{"abcdef", 6, "abcdef"},
		// The cut falls inside &amp;: the whole entity goes.
		{"ab&cd", 5, "ab…"},
		{"ab&cd", 7, "ab…"},
		{"ab&cd", 8, "ab&amp;…"},
		{"ab&cd", 9, "ab&amp;cd"},
		{"<<<<", 6, "&lt;…"},
		{"héllo wörld", 6, "héllo…"},
		{"x", 0, ""},
	}
	for _, tt := range tests {
		if got := EscapeClip(tt.in, tt.n); got != tt.want {
			t.Errorf("EscapeClip(%q, %d): got %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestEscapeClipAmpersands is the case that made Slack refuse alerts: a
// summary of 600 ampersands, clipped and then escaped, was 3,000
// characters; escaped and then clipped it stays within its budget.
func TestEscapeClipAmpersands(t *testing.T) {
	got := EscapeClip(strings.Repeat("&", 600), 600)
	if n := utf8.RuneCountInString(got); n > 600 {
		t.Errorf("got %d characters, want at most 600", n)
	}
	if !strings.HasSuffix(got, "&amp;…") {
		t.Errorf("got %q, want whole entities and the cut marked", got[len(got)-20:])
	}
}

// FuzzEscapeClip checks for any text and limit that the result fits the
// limit, is the escaped text or a cut of it on a whole entity, and holds
// none of mrkdwn's control characters.
func FuzzEscapeClip(f *testing.F) {
	f.Add("a<b>&`c`", 5)
	f.Add(strings.Repeat("&<>", 50), 37)
	f.Add("héllo", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n % 4000
		got := EscapeClip(s, n)
		if c := utf8.RuneCountInString(got); c > max(n, 0) {
			t.Fatalf("EscapeClip(%q, %d) = %q: %d characters", s, n, got, c)
		}
		full := Escape(strings.ToValidUTF8(s, "\uFFFD"))
		body := strings.TrimSuffix(got, "…")
		if got != full && !strings.HasPrefix(full, body) {
			t.Fatalf("EscapeClip(%q, %d) = %q: not a cut of %q", s, n, got, full)
		}
		if strings.ContainsAny(body, "<>`") {
			t.Fatalf("EscapeClip(%q, %d) = %q: unescaped control characters", s, n, got)
		}
		for i := strings.IndexByte(body, '&'); i >= 0; i = strings.IndexByte(body[i+1:], '&') + i + 1 {
			rest := body[i:]
			if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
				t.Fatalf("EscapeClip(%q, %d) = %q: a broken entity at %d", s, n, got, i)
			}
			if strings.IndexByte(body[i+1:], '&') < 0 {
				break
			}
		}
	})
}

func mrkdwn(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.MarkdownType, s, false, false)
}

func plain(s string) *goslack.TextBlockObject {
	return goslack.NewTextBlockObject(goslack.PlainTextType, s, false, false)
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("x", 3001)
	button := func(text, value string) *goslack.ActionBlock {
		return goslack.NewActionBlock("a", goslack.NewButtonBlockElement("gpuwatch_ack", value, plain(text)))
	}
	tests := []struct {
		name   string
		blocks []goslack.Block
		want   string // a substring of the error; "" for none
	}{
		{"fine", []goslack.Block{goslack.NewHeaderBlock(plain("GPUHot")), goslack.NewSectionBlock(mrkdwn("hot"), nil, nil), button("Ack", "k")}, ""},
		{"a long section", []goslack.Block{goslack.NewSectionBlock(mrkdwn(long), nil, nil)}, "block 1 (section): text: text cannot be longer than 3000 characters"},
		{"an empty section text", []goslack.Block{goslack.NewSectionBlock(mrkdwn(""), nil, nil)}, "text must have a minimum length of 1"},
		{"a long header", []goslack.Block{goslack.NewHeaderBlock(plain(strings.Repeat("h", 151)))}, "block 1 (header): text has 151 characters, more than Slack's 150"},
		{"a mrkdwn header", []goslack.Block{goslack.NewHeaderBlock(mrkdwn("h"))}, "text must be plain_text, not mrkdwn"},
		{"a long field", []goslack.Block{goslack.NewSectionBlock(nil, []*goslack.TextBlockObject{mrkdwn(strings.Repeat("f", 2001))}, nil)}, "field 1 has 2001 characters, more than Slack's 2000"},
		{"eleven fields", []goslack.Block{goslack.NewSectionBlock(nil, make11(), nil)}, "11 fields, more than Slack's 10"},
		{"a long button", []goslack.Block{button(strings.Repeat("b", 76), "k")}, "button 1 text has 76 characters"},
		{"a long button value", []goslack.Block{button("Ack", strings.Repeat("v", 2001))}, "button 1 value has 2001 characters"},
		{"51 blocks", make51(), "51 blocks, more than Slack's 50"},
	}
	for _, tt := range tests {
		err := Validate(tt.blocks)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: got %v, want no error", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
	if err := ValidateMessage(strings.Repeat("t", 40001), nil); err == nil {
		t.Error("ValidateMessage: got no error for 40,001 characters of text")
	}
	if err := ValidateMessage("", nil); err == nil {
		t.Error("ValidateMessage: got no error for an empty message")
	}
}

func make11() []*goslack.TextBlockObject {
	out := make([]*goslack.TextBlockObject, 11)
	for i := range out {
		out[i] = mrkdwn("f")
	}
	return out
}

func make51() []goslack.Block {
	out := make([]goslack.Block, 51)
	for i := range out {
		out[i] = goslack.NewDividerBlock()
	}
	return out
}

func TestPlainText(t *testing.T) {
	blocks := []goslack.Block{
		goslack.NewHeaderBlock(plain("🔴 GPUHot <on> node1")),
		goslack.NewSectionBlock(mrkdwn("*GPU 3* is hot"), []*goslack.TextBlockObject{mrkdwn("*Value*\n88 C"), mrkdwn("*Since*\n09:00")}, nil),
		goslack.NewDividerBlock(),
		goslack.NewContextBlock("", mrkdwn("last 30 min `▁▂▃`")),
		goslack.NewActionBlock("a", goslack.NewButtonBlockElement("gpuwatch_ack", "k", plain("Acknowledge"))),
	}
	want := "*🔴 GPUHot &lt;on&gt; node1*\n\n*GPU 3* is hot\n*Value* 88 C\n*Since* 09:00\n\nlast 30 min `▁▂▃`"
	if got := PlainText(blocks); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
