package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// Usage digests (notifications with Status notifier.StatusDigest) travel
// in every format but the two that take alerts only: generic posts the
// digest and its data, the chat formats its title and markdown, template
// executes with the notification (.Digest set, .Alerts empty), and
// alertmanager and pagerduty refuse it with a permanent error.

// errDigestEmpty is a digest notification without its digest: a bug
// upstream, never worth a retry.
var errDigestEmpty = errors.New("a digest notification without its digest (a gpuwatch bug: please report it)")

// genericDigestMessage is the generic format's body for a digest.
type genericDigestMessage struct {
	Version  string        `json:"version"`
	Receiver string        `json:"receiver"`
	Status   string        `json:"status"`
	Digest   genericDigest `json:"digest"`
}

type genericDigest struct {
	Name     string          `json:"name"`
	Title    string          `json:"title"`
	Text     string          `json:"text"`
	Markdown string          `json:"markdown"`
	Data     json.RawMessage `json:"data"`
}

// isDigest reports whether m carries a usage digest rather than alerts.
func isDigest(m *notifier.Notification) bool {
	return m != nil && (m.Digest != nil || m.Status == notifier.StatusDigest)
}

// notifyDigest makes one attempt to deliver a digest in the receiver's
// format; formats that take alerts only fail for good.
func (n *Notifier) notifyDigest(ctx context.Context, m *notifier.Notification) (bool, error) {
	target, body, err := n.encodeDigest(m)
	if err != nil {
		return false, n.fail(fmt.Errorf("%s: digest: %w", n.cfg.Format, err))
	}
	return n.post(ctx, target, body, m.IdempotencyKey(), n.answerCheck())
}

// encodeDigest builds the request's URL and body of a digest.
func (n *Notifier) encodeDigest(m *notifier.Notification) (target string, body []byte, err error) {
	d := m.Digest
	if d == nil {
		return "", nil, errDigestEmpty
	}
	title := digestTitle(d)
	switch n.cfg.Format {
	case FormatGeneric:
		data := d.Data
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		body, err = json.Marshal(genericDigestMessage{Version: genericVersion, Receiver: n.name, Status: string(notifier.StatusDigest),
			Digest: genericDigest{Name: d.Name, Title: d.Title, Text: d.Text, Markdown: d.Markdown, Data: data}})
	case FormatAlertmanager:
		err = errors.New("the alertmanager format takes alerts only, not digests: send the digest to a receiver of another format")
	case FormatPagerDuty:
		err = errors.New("pagerduty takes alerts, not digests: send the digest to a receiver of another format")
	case FormatDiscord:
		body, err = json.Marshal(discordMessage{Content: truncate(title, discordMaxContent), AllowedMentions: discordMentions{Parse: []string{}},
			Embeds: []discordEmbed{{Title: truncate(title, discordMaxTitle), Description: truncate(digestMarkdown(d), discordMaxDescription),
				Color: colorInfo, Fields: []discordField{}, Timestamp: m.CreatedAt.UTC()}}})
	case FormatTeams:
		card := teamsCard{
			Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4",
			MSTeams: map[string]string{"width": "Full"},
			Body: []teamsBlock{{Type: "TextBlock", Text: title, Wrap: true, Size: "Large", Weight: "Bolder"},
				{Type: "TextBlock", Text: truncate(blankLines(digestMarkdown(d)), teamsMaxText), Wrap: true, Separator: true}},
		}
		body, err = json.Marshal(teamsMessage{Type: "message", Attachments: []teamsAttachment{
			{ContentType: "application/vnd.microsoft.card.adaptive", Content: card}}})
	case FormatFeishu:
		msg := feishuMessage{MsgType: "interactive", Card: feishuCard{
			Config: map[string]bool{"wide_screen_mode": true},
			Header: feishuHeader{Template: "blue", Title: feishuElement{Tag: "plain_text", Content: title}},
			Elements: []feishuElement{{Tag: "markdown",
				Content: truncate(htmlStyle("\n").esc(digestMarkdown(d)), feishuMaxText)}},
		}}
		if n.cfg.Secret != "" {
			msg.Timestamp = strconv.FormatInt(n.now().Unix(), 10)
			msg.Sign = feishuSign(n.cfg.Secret, msg.Timestamp)
		}
		body, err = json.Marshal(msg)
	case FormatDingTalk:
		text := "### " + title + "\n\n" + blankLines(digestMarkdown(d))
		body, err = json.Marshal(dingTalkMessage{MsgType: "markdown",
			Markdown: dingTalkMarkdown{Title: title, Text: truncate(text, dingTalkMaxText)}})
		if err == nil && n.cfg.Secret != "" {
			target, err = signDingTalkURL(n.url, n.cfg.Secret, n.now())
		}
	case FormatWeCom:
		content := "**" + title + "**\n" + htmlStyle("\n").esc(digestMarkdown(d))
		body, err = json.Marshal(weComMessage{MsgType: "markdown", Markdown: weComMarkdown{Content: truncate(content, weComMaxContent)}})
	case FormatTemplate:
		body, err = executeTemplate(n.body, m, n.ctype)
	default:
		err = fmt.Errorf("unknown format %q", n.cfg.Format)
	}
	if err != nil {
		return "", nil, err
	}
	if target == "" {
		target = n.url
	}
	return target, body, nil
}

// digestTitle is the digest's title, or one made from its name.
func digestTitle(d *notifier.Digest) string {
	if d.Title != "" {
		return d.Title
	}
	return "gpuwatch digest " + d.Name
}

// digestMarkdown is the digest's markdown, or its plain text when it has
// none.
func digestMarkdown(d *notifier.Digest) string {
	if d.Markdown != "" {
		return d.Markdown
	}
	return d.Text
}

// blankLines turns each line break into a blank line, for the chats whose
// markdown breaks lines only there (Teams, DingTalk).
func blankLines(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\n\n")
}
