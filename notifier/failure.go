package notifier

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strings"
)

// FailureReason says why a delivery try failed, in words an operator can
// alert on: gpuwatch_notifications_failed_total{reason}.
type FailureReason int

// The reasons a delivery try fails.
const (
	// FailureOther is any failure none of the others describes.
	FailureOther FailureReason = iota
	// FailureTimeout: the receiver did not answer in time.
	FailureTimeout
	// FailureConnection: no connection (refused, reset, DNS, TLS).
	FailureConnection
	// FailureRateLimited: the receiver asked to slow down (429, Slack's
	// rate limit).
	FailureRateLimited
	// FailureHTTP4xx: the receiver refused the request (a 4xx other than 429).
	FailureHTTP4xx
	// FailureHTTP5xx: the receiver failed (a 5xx).
	FailureHTTP5xx
	// FailureRejected: the receiver answered but said no in its body
	// (Slack ok:false, a chat bot's error code).
	FailureRejected

	numFailureReasons
)

// String returns the reason as the reason label shows it.
func (r FailureReason) String() string {
	switch r {
	case FailureTimeout:
		return "timeout"
	case FailureConnection:
		return "connection"
	case FailureRateLimited:
		return "rate_limited"
	case FailureHTTP4xx:
		return "http_4xx"
	case FailureHTTP5xx:
		return "http_5xx"
	case FailureRejected:
		return "rejected"
	}
	return "other"
}

// FailureReasons lists every reason, FailureOther first.
func FailureReasons() []FailureReason {
	out := make([]FailureReason, numFailureReasons)
	for r := range numFailureReasons {
		out[r] = r
	}
	return out
}

// httpStatusText finds the status CheckResponse writes ("HTTP 503 …").
var httpStatusText = regexp.MustCompile(`\bHTTP ([45])\d\d\b`)

// ClassifyFailure says why a delivery failed, from the error a Notifier
// returned. It is the one place that decides: the error's chain first
// (a *RetryAfterError, a deadline, a net.Error), then the words every
// integration writes (CheckResponse's "HTTP 503", Slack's "ok:false"),
// because integrations that redact their errors keep only the text.
func ClassifyFailure(err error) FailureReason {
	if err == nil {
		return FailureOther
	}
	var (
		retryAfter *RetryAfterError
		netErr     net.Error
		opErr      *net.OpError
		dnsErr     *net.DNSError
	)
	switch {
	case errors.As(err, &retryAfter):
		if m := httpStatusText.FindStringSubmatch(err.Error()); m != nil && m[1] == "5" {
			return FailureHTTP5xx // a 503 that said when to come back
		}
		return FailureRateLimited
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return FailureConnection
	}
	text := err.Error()
	if m := httpStatusText.FindStringSubmatch(text); m != nil {
		if m[1] == "5" {
			return FailureHTTP5xx
		}
		return FailureHTTP4xx
	}
	lower := strings.ToLower(text)
	switch {
	case containsAny(lower, "rate limited", "ratelimited", "rate_limited"):
		return FailureRateLimited
	case strings.Contains(text, "ok:false"), strings.Contains(lower, "refused with code"):
		return FailureRejected
	case strings.Contains(lower, "timeout"), strings.Contains(lower, "deadline exceeded"):
		return FailureTimeout
	case containsAny(lower, "connection refused", "connection reset", "no such host", "dial tcp",
		"broken pipe", "tls:", "x509:", "eof"):
		return FailureConnection
	}
	return FailureOther
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
