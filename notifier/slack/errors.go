package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	goslack "github.com/slack-go/slack"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// retryableSlackError reports whether the `error` of an ok:false answer
// says "try again later" rather than "this request is wrong".
func retryableSlackError(code string) bool {
	switch code {
	case "ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
		return true
	}
	return false
}

// slackErrorHint tells a person what to do about an ok:false answer a
// misconfigured receiver gets; "" when there is nothing to add.
func slackErrorHint(code string) string {
	switch code {
	case "channel_not_found":
		return "check slack.channel, and invite the bot to a private channel"
	case "not_in_channel":
		return "invite the bot to the channel (/invite @your-bot)"
	case "is_archived":
		return "the channel is archived: unarchive it or change slack.channel"
	case "invalid_auth", "not_authed":
		return "check slack.bot_token"
	case "account_inactive", "token_revoked", "token_expired":
		return "the bot token no longer works: reinstall the Slack app and update slack.bot_token"
	case "missing_scope":
		return "give the Slack app the chat:write scope and reinstall it"
	case "invalid_blocks", "msg_too_long", "invalid_arguments":
		return "Slack refused the message: please report this as a gpuwatch bug"
	case "message_not_found":
		return "the original message was deleted"
	case "cant_update_message", "edit_window_closed":
		return "the original message can no longer be updated"
	}
	return ""
}

// classify is the one place that decides whether a failed Slack call is
// worth a retry: Slack's rate limit (with its Retry-After), HTTP 429 and
// 5xx, the ok:false errors that mean "later", transport errors and
// timeouts are retried; other HTTP statuses and ok:false errors are
// permanent. A 2xx status other than 200 counts as delivered (err is
// nil), as for every other integration. retryAfter is the Retry-After of
// a 503 answer, which slack-go drops. The returned error names no URL.
func classify(err error, retryAfter time.Duration) (retry bool, out error) {
	if err == nil {
		return false, nil
	}
	var (
		rateLimited *goslack.RateLimitedError
		status      goslack.StatusCodeError
		apiErr      goslack.SlackErrorResponse
		urlErr      *url.Error
		netErr      net.Error
		syntaxErr   *json.SyntaxError
		typeErr     *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &rateLimited):
		return true, &notifier.RetryAfterError{After: rateLimited.RetryAfter, Err: errors.New("rate limited")}
	case errors.As(err, &status):
		// The same rule as every HTTP integration, in its one place.
		header := http.Header{}
		if retryAfter > 0 {
			header.Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
		}
		return notifier.CheckResponse(&http.Response{StatusCode: status.Code, Body: http.NoBody, Header: header}, time.Time{}) // seconds: no clock needed
	case errors.As(err, &apiErr):
		msg := apiErr.Err
		if hint := slackErrorHint(msg); hint != "" {
			msg += ": " + hint
		}
		if apiErr.Needed != "" {
			msg += fmt.Sprintf(" (needed scope %s)", apiErr.Needed)
		}
		return retryableSlackError(apiErr.Err), fmt.Errorf("ok:false %s", msg)
	case errors.As(err, &urlErr):
		return true, notifier.TransportError(urlErr)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &netErr),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true, err
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, io.EOF):
		return false, fmt.Errorf("the answer is not the Slack Web API's JSON (check slack.api_url): %w", err)
	}
	// Unknown failures (an unparsable Retry-After, say) are worth another
	// try: the outbox gives up on its own schedule.
	return true, err
}

// fail turns a failed call into what Notify returns: classified, named
// after the call, with every secret the notifier holds redacted from the
// text. The chain stays (errors.As finds a *notifier.RetryAfterError).
func (n *Notifier) fail(ctx context.Context, op string, err error) (bool, error) {
	retry, err := classify(err, retryAfterOf(ctx))
	if err == nil {
		return false, nil
	}
	return retry, &redactedError{text: notifier.Redact("slack "+op+": "+err.Error(), n.secrets...), err: err}
}

// redactedError is an error whose text has the secrets taken out.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }
