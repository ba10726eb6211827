package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// feishuMaxText bounds the card's text; Feishu refuses bodies over 20 KB.
const feishuMaxText = 15000

// feishuMessage is a Feishu/Lark custom bot's interactive card message.
type feishuMessage struct {
	Timestamp string     `json:"timestamp,omitempty"`
	Sign      string     `json:"sign,omitempty"`
	MsgType   string     `json:"msg_type"`
	Card      feishuCard `json:"card"`
}

type feishuCard struct {
	Config   map[string]bool `json:"config"`
	Header   feishuHeader    `json:"header"`
	Elements []feishuElement `json:"elements"`
}

type feishuHeader struct {
	Template string        `json:"template"`
	Title    feishuElement `json:"title"`
}

type feishuElement struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

// encodeFeishu builds a card coloured by severity; with a secret it is
// signed with the time now.
func encodeFeishu(m *notifier.Notification, secret string, now time.Time) ([]byte, error) {
	template := map[int]string{colorCritical: "red", colorWarning: "orange", colorInfo: "blue", colorResolved: "green"}[alertColor(&m.Alerts[0])]
	msg := feishuMessage{MsgType: "interactive", Card: feishuCard{
		Config: map[string]bool{"wide_screen_mode": true},
		Header: feishuHeader{Template: template, Title: feishuElement{Tag: "plain_text", Content: headline(m)}},
		Elements: []feishuElement{{Tag: "markdown",
			Content: truncate(notificationText(m, htmlStyle("\n")), feishuMaxText)}},
	}}
	if secret != "" {
		msg.Timestamp = strconv.FormatInt(now.Unix(), 10)
		msg.Sign = feishuSign(secret, msg.Timestamp)
	}
	return json.Marshal(msg)
}

// feishuSign is Feishu's signature: the HMAC-SHA256 of nothing, keyed
// with timestamp+"\n"+secret, in base64.
func feishuSign(secret, timestamp string) string {
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
