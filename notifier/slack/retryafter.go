package slack

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// slack-go turns a 503 into a StatusCodeError without its headers, so the
// Retry-After a 503 carries would be lost. The notifier's HTTP client
// notes it in the request's context instead, where classify finds it.

type retryAfterKey struct{}

// retryAfterNote holds the Retry-After of the last 503 a call got.
type retryAfterNote struct{ after atomic.Int64 }

// withRetryAfterNote returns ctx with a fresh note for the calls made
// under it.
func withRetryAfterNote(ctx context.Context) context.Context {
	return context.WithValue(ctx, retryAfterKey{}, &retryAfterNote{})
}

// retryAfterOf returns the Retry-After noted under ctx, 0 when none.
func retryAfterOf(ctx context.Context) time.Duration {
	if note, ok := ctx.Value(retryAfterKey{}).(*retryAfterNote); ok {
		return time.Duration(note.after.Load())
	}
	return 0
}

// noteRetryAfter is a RoundTripper that notes the Retry-After of a 503
// answer in the request's note; now (nil: none) counts a date in an
// answer without a Date header.
type noteRetryAfter struct {
	base http.RoundTripper
	now  func() time.Time
}

func (t noteRetryAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		return resp, err
	}
	if note, ok := req.Context().Value(retryAfterKey{}).(*retryAfterNote); ok {
		var now time.Time
		if t.now != nil {
			now = t.now()
		}
		note.after.Store(int64(notifier.RetryAfter(resp, now)))
	}
	return resp, nil
}

// notingClient returns a copy of c whose transport notes Retry-After.
func notingClient(c *http.Client, now func() time.Time) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = noteRetryAfter{base, now}
	return &out
}
