package notifier

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RetryAfterError is a failure the far side asked to be retried after a
// while (HTTP 429 or 503 with Retry-After, Slack's rate limit). The
// deliverer waits After, but never longer than its backoff's longest wait.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %v)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// CheckResponse classifies an HTTP answer, the one place that decides what
// is worth a retry: 2xx is delivered; 429 and 5xx are retried (429 and 503
// after their Retry-After, as RFC 9110 has servers say when to come back);
// any other status is permanent. now is the caller's clock, for a
// Retry-After given as a date in an answer without a Date header. The
// error quotes the start of the body, never the request's URL. It reads
// and closes nothing; the caller closes the body.
func CheckResponse(resp *http.Response, now time.Time) (retry bool, err error) {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return false, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	err = fmt.Errorf("HTTP %d %s", code, http.StatusText(code))
	if text := strings.TrimSpace(string(body)); text != "" {
		err = fmt.Errorf("HTTP %d %s: %s", code, http.StatusText(code), oneLine(text, 200))
	}
	switch {
	case code == http.StatusTooManyRequests:
		return true, &RetryAfterError{After: RetryAfter(resp, now), Err: err}
	case code == http.StatusServiceUnavailable:
		if after := RetryAfter(resp, now); after > 0 {
			return true, &RetryAfterError{After: after, Err: err}
		}
		return true, err
	case code >= 500:
		return true, err
	}
	return false, err
}

// RetryAfter is how long an answer's Retry-After asks to wait: seconds,
// or an HTTP date, which counts from the answer's own Date header when it
// has one (the server's clock: the two clocks need not agree), else from
// now. Anything else (or nothing) is 0: the caller's backoff decides.
func RetryAfter(resp *http.Response, now time.Time) time.Duration {
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		now = date
	}
	return ParseRetryAfter(resp.Header.Get("Retry-After"), now)
}

// ParseRetryAfter reads a Retry-After header: seconds, or an HTTP date
// relative to now. Anything else (or nothing, or a date with no now to
// count from) is 0: the caller's backoff decides.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && !now.IsZero() && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// TransportError turns an error from an HTTP client into one that is safe to
// log: *url.Error quotes the full URL, and webhook URLs hold secrets, so
// only the scheme and host are kept. Transport errors are worth a retry.
func TransportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, RedactURL(ue.URL), ue.Err)
	}
	return err
}

// RedactURL keeps a URL's scheme and host and hides the rest, where
// webhook tokens live: "https://hooks.slack.com/services/T0/B0/XXX" →
// "https://hooks.slack.com/…".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<url>"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
