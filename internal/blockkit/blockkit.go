// Package blockkit keeps gpuwatch's Slack messages within what Slack
// accepts. User text (summaries, commands, user and host names) is escaped
// for mrkdwn first and clipped after, on a whole character and a whole
// entity, so the text Slack counts is the text that was measured; and every
// message is checked against Slack's Block Kit limits, with slack-go's own
// validation of each text object, before it is sent. Slack refuses a
// message that breaks a limit (invalid_blocks), and gpuwatch must not learn
// that from Slack: an alert refused for good is a dead letter no one reads.
package blockkit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	goslack "github.com/slack-go/slack"
)

// Slack's limits on a message (api.slack.com/reference/block-kit), in
// characters.
const (
	MaxBlocks          = 50    // blocks in a message
	MaxText            = 3000  // a section's or a context element's text
	MaxHeaderText      = 150   // a header's text
	MaxFields          = 10    // fields of a section
	MaxFieldText       = 2000  // one field
	MaxContextElements = 10    // elements of a context block
	MaxActionElements  = 25    // elements of an actions block
	MaxButtonText      = 75    // a button's label
	MaxButtonValue     = 2000  // a button's value
	MaxID              = 255   // a block_id or action_id
	MaxMessageText     = 40000 // a message's top-level text
)

// Escape makes text safe in Slack mrkdwn: &, < and > are control
// characters there (a command line with "<!channel>" must not ping
// anyone), and a backtick would end a code span.
func Escape(s string) string {
	if !strings.ContainsAny(s, "&<>`") {
		return s
	}
	return escaper.Replace(s)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "`", "'")

// Clip cuts s to at most n characters, marking the cut with "…".
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// EscapeClip escapes s for mrkdwn and clips the result to at most n
// characters without cutting an entity ("&am…") in two: the limit holds
// for the text Slack counts, however many & the text has. Bytes that are
// not UTF-8 become U+FFFD, as they would in the message's JSON.
func EscapeClip(s string, n int) string {
	return ClipEscaped(Escape(strings.ToValidUTF8(s, "\uFFFD")), n)
}

// ClipEscaped clips text that is already escaped (mrkdwn built from
// escaped parts) to at most n characters, on a whole entity.
func ClipEscaped(e string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(e) <= n {
		return e
	}
	cut := string([]rune(e)[:n-1])
	// Every & of escaped text starts an entity of at most 5 characters.
	if i := strings.LastIndexByte(cut, '&'); i >= 0 && len(cut)-i < len("&amp;") && !strings.Contains(cut[i:], ";") {
		cut = cut[:i]
	}
	return cut + "…"
}

// Validate checks blocks against Slack's limits: the number of blocks,
// fields, elements; each text object with slack-go's TextBlockObject
// validation, and the shorter limits of headers, fields and buttons. It
// returns every problem found, naming the block ("block 3 (section): …").
// Block types gpuwatch does not build are accepted as they are.
func Validate(blocks []goslack.Block) error {
	var errs []error
	fail := func(i int, b goslack.Block, format string, args ...any) {
		errs = append(errs, fmt.Errorf("block %d (%s): %s", i+1, b.BlockType(), fmt.Sprintf(format, args...)))
	}
	if len(blocks) > MaxBlocks {
		errs = append(errs, fmt.Errorf("%d blocks, more than Slack's %d", len(blocks), MaxBlocks))
	}
	for i, b := range blocks {
		for _, p := range blockProblems(b) {
			fail(i, b, "%s", p)
		}
	}
	return errors.Join(errs...)
}

// blockProblems lists what is wrong with one block.
func blockProblems(b goslack.Block) []string {
	var problems []string
	text := func(what string, t *goslack.TextBlockObject, limit int, kind string) {
		if t == nil {
			problems = append(problems, what+" is missing")
			return
		}
		if err := t.Validate(); err != nil {
			problems = append(problems, what+": "+err.Error())
			return
		}
		if n := utf8.RuneCountInString(t.Text); n > limit {
			problems = append(problems, fmt.Sprintf("%s has %d characters, more than Slack's %d", what, n, limit))
		}
		if kind != "" && t.Type != kind {
			problems = append(problems, fmt.Sprintf("%s must be %s, not %s", what, kind, t.Type))
		}
	}
	id := func(what, s string) {
		if len(s) > MaxID {
			problems = append(problems, fmt.Sprintf("%s has %d characters, more than Slack's %d", what, len(s), MaxID))
		}
	}
	switch b := b.(type) {
	case *goslack.HeaderBlock:
		id("block_id", b.BlockID)
		text("text", b.Text, MaxHeaderText, goslack.PlainTextType)
	case *goslack.SectionBlock:
		id("block_id", b.BlockID)
		if b.Text == nil && len(b.Fields) == 0 {
			problems = append(problems, "has neither text nor fields")
		}
		if b.Text != nil {
			text("text", b.Text, MaxText, "")
		}
		if len(b.Fields) > MaxFields {
			problems = append(problems, fmt.Sprintf("%d fields, more than Slack's %d", len(b.Fields), MaxFields))
		}
		for j, f := range b.Fields {
			text(fmt.Sprintf("field %d", j+1), f, MaxFieldText, "")
		}
	case *goslack.ContextBlock:
		id("block_id", b.BlockID)
		els := b.ContextElements.Elements
		switch {
		case len(els) == 0:
			problems = append(problems, "has no elements")
		case len(els) > MaxContextElements:
			problems = append(problems, fmt.Sprintf("%d elements, more than Slack's %d", len(els), MaxContextElements))
		}
		for j, e := range els {
			if t, ok := e.(*goslack.TextBlockObject); ok {
				text(fmt.Sprintf("element %d", j+1), t, MaxText, "")
			}
		}
	case *goslack.ActionBlock:
		id("block_id", b.BlockID)
		if b.Elements == nil || len(b.Elements.ElementSet) == 0 {
			problems = append(problems, "has no elements")
			break
		}
		if n := len(b.Elements.ElementSet); n > MaxActionElements {
			problems = append(problems, fmt.Sprintf("%d elements, more than Slack's %d", n, MaxActionElements))
		}
		for j, e := range b.Elements.ElementSet {
			if btn, ok := e.(*goslack.ButtonBlockElement); ok {
				what := fmt.Sprintf("button %d", j+1)
				text(what+" text", btn.Text, MaxButtonText, goslack.PlainTextType)
				id(what+" action_id", btn.ActionID)
				if n := utf8.RuneCountInString(btn.Value); n > MaxButtonValue {
					problems = append(problems, fmt.Sprintf("%s value has %d characters, more than Slack's %d", what, n, MaxButtonValue))
				}
			}
		}
	}
	return problems
}

// ValidateMessage checks a whole message: its blocks, and the top-level
// text Slack shows in notifications.
func ValidateMessage(text string, blocks []goslack.Block) error {
	err := Validate(blocks)
	if n := utf8.RuneCountInString(text); n > MaxMessageText {
		err = errors.Join(err, fmt.Errorf("the message text has %d characters, more than Slack's %d", n, MaxMessageText))
	}
	if text == "" && len(blocks) == 0 {
		err = errors.Join(err, errors.New("the message is empty"))
	}
	return err
}

// PlainText is the message of blocks as mrkdwn text alone, for when Slack
// will not take the blocks: every header, section (with its fields) and
// context text, one block a paragraph; buttons and images are left out.
// The texts of mrkdwn objects are already escaped; plain_text is escaped
// here.
func PlainText(blocks []goslack.Block) string {
	var parts []string
	add := func(t *goslack.TextBlockObject) string {
		switch {
		case t == nil:
			return ""
		case t.Type == goslack.PlainTextType:
			return Escape(t.Text)
		}
		return t.Text
	}
	for _, b := range blocks {
		var lines []string
		switch b := b.(type) {
		case *goslack.HeaderBlock:
			lines = append(lines, "*"+add(b.Text)+"*")
		case *goslack.SectionBlock:
			lines = append(lines, add(b.Text))
			for _, f := range b.Fields {
				lines = append(lines, strings.ReplaceAll(add(f), "\n", " "))
			}
		case *goslack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if t, ok := e.(*goslack.TextBlockObject); ok {
					lines = append(lines, add(t))
				}
			}
		}
		var kept []string
		for _, l := range lines {
			if strings.TrimSpace(strings.Trim(l, "*")) != "" {
				kept = append(kept, l)
			}
		}
		if len(kept) > 0 {
			parts = append(parts, strings.Join(kept, "\n"))
		}
	}
	return strings.Join(parts, "\n\n")
}
