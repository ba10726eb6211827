package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// dingTalkMaxText bounds the markdown text DingTalk is sent.
const dingTalkMaxText = 15000

type dingTalkMessage struct {
	MsgType  string           `json:"msgtype"`
	Markdown dingTalkMarkdown `json:"markdown"`
}

type dingTalkMarkdown struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// encodeDingTalk builds a markdown message; DingTalk's markdown breaks
// lines on blank lines only.
func encodeDingTalk(m *notifier.Notification) ([]byte, error) {
	title := headline(m)
	text := "### " + title + "\n\n" + notificationText(m, style{br: "\n\n"})
	return json.Marshal(dingTalkMessage{MsgType: "markdown",
		Markdown: dingTalkMarkdown{Title: title, Text: truncate(text, dingTalkMaxText)}})
}

// signDingTalkURL adds DingTalk's signature to the webhook URL:
// timestamp (ms) and sign = base64(HMAC-SHA256(secret, timestamp+"\n"+secret)).
// It replaces any timestamp and sign already there.
func signDingTalkURL(raw, secret string, now time.Time) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url is not a valid URL")
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	q := u.Query()
	q.Set("timestamp", ts)
	q.Set("sign", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
