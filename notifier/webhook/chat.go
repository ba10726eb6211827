package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Feishu, DingTalk and WeCom answer HTTP 200 to a message they refuse and
// say so in the body; these read that answer.

// codeAnswer holds the codes of every such answer: Feishu's {"code","msg"}
// (older bots: {"StatusCode","StatusMessage"}), DingTalk's and WeCom's
// {"errcode","errmsg"}.
type codeAnswer struct {
	Code          *int   `json:"code"`
	Msg           string `json:"msg"`
	StatusCode    *int   `json:"StatusCode"`
	StatusMessage string `json:"StatusMessage"`
	ErrCode       *int   `json:"errcode"`
	ErrMsg        string `json:"errmsg"`
}

// checkCodeAnswer reports a non-zero code as an error, worth a retry when
// the code is one of retryCodes (rate limits, "system busy"). An empty body
// (HTTP 204) is success; a body that is not JSON is not.
func checkCodeAnswer(body []byte, retryCodes ...int) (bool, error) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return false, nil
	}
	var a codeAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return false, fmt.Errorf("answer is not the JSON the bot sends (is the url right?): %q", shorten(string(body), 120))
	}
	for _, c := range []struct {
		code *int
		msg  string
	}{{a.Code, a.Msg}, {a.StatusCode, a.StatusMessage}, {a.ErrCode, a.ErrMsg}} {
		if c.code != nil && *c.code != 0 {
			return slices.Contains(retryCodes, *c.code), fmt.Errorf("refused with code %d: %s", *c.code, shorten(c.msg, 200))
		}
	}
	return false, nil
}

// Codes that say "too many messages, try later".
const (
	feishuRateLimited   = 11232  // frequency limited
	dingTalkRateLimited = 130101 // send too fast, exceed 20 times per minute
	weComRateLimited    = 45009  // api freq out of limit
	weComBusy           = -1     // system busy
)

func checkFeishuAnswer(body []byte) (bool, error) { return checkCodeAnswer(body, feishuRateLimited) }

func checkDingTalkAnswer(body []byte) (bool, error) {
	return checkCodeAnswer(body, dingTalkRateLimited)
}

func checkWeComAnswer(body []byte) (bool, error) {
	return checkCodeAnswer(body, weComRateLimited, weComBusy)
}

// htmlStyle escapes "<" for chats whose markdown takes HTML-like tags, so
// a command line cannot mention everyone (Feishu's <at id=all>).
func htmlStyle(br string) style {
	return style{br: br, escape: func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") }}
}
