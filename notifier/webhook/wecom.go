package webhook

import (
	"encoding/json"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// weComMaxContent is WeCom's limit on markdown content, in bytes.
const weComMaxContent = 4096

type weComMessage struct {
	MsgType  string        `json:"msgtype"`
	Markdown weComMarkdown `json:"markdown"`
}

type weComMarkdown struct {
	Content string `json:"content"`
}

// encodeWeCom builds a WeCom (WeChat Work) group bot markdown message.
func encodeWeCom(m *notifier.Notification) ([]byte, error) {
	content := "**" + headline(m) + "**\n" + notificationText(m, htmlStyle("\n"))
	return json.Marshal(weComMessage{MsgType: "markdown", Markdown: weComMarkdown{Content: truncate(content, weComMaxContent)}})
}
