package notifier_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// TestURLSecrets: the token segments of a webhook URL are secrets, the
// plain words of its route are not.
func TestURLSecrets(t *testing.T) {
	tests := []struct {
		url       string
		secret    []string
		notSecret []string
	}{
		{"https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/abcdefghijklmnopqrstuvwx",
			[]string{"T0AB12CD3", "B0EF45GH6", "abcdefghijklmnopqrstuvwx"}, []string{"services", "hooks.slack.com"}},
		{"https://discord.com/api/webhooks/1234567890/Tok3n-abc_DEF",
			[]string{"1234567890", "Tok3n-abc_DEF"}, []string{"webhooks", "api"}},
		{"https://open.feishu.cn/open-apis/bot/v2/hook/8f2a1c3e-5b6d-4e7f-9a0b-1c2d3e4f5a6b",
			[]string{"8f2a1c3e-5b6d-4e7f-9a0b-1c2d3e4f5a6b"}, []string{"open-apis", "hook"}},
		{"https://oapi.dingtalk.com/robot/send?access_token=abcdef",
			[]string{"abcdef", "access_token=abcdef"}, []string{"robot", "send"}},
		{"http://user:pa55word@example.net/hook", []string{"pa55word", "dXNlcjpwYTU1d29yZA=="}, []string{"user", "hook"}},
	}
	for _, tt := range tests {
		got := notifier.URLSecrets(tt.url)
		for _, s := range tt.secret {
			if !slices.Contains(got, s) {
				t.Errorf("URLSecrets(%s): %q missing from %q", tt.url, s, got)
			}
		}
		for _, s := range tt.notSecret {
			if slices.Contains(got, s) {
				t.Errorf("URLSecrets(%s): %q is a word of the route, not a secret", tt.url, s)
			}
		}
	}
}

// TestSecretsEscapedForms: a secret is redacted in the forms a far side
// echoes it in, and a URL before its parts.
func TestSecretsEscapedForms(t *testing.T) {
	secrets := notifier.Secrets("a/b c+d", "https://h/x/a/b c+d", "ab")
	for _, text := range []string{"a/b c+d", "a%2Fb+c%2Bd", "a%2Fb%20c+d", `a\/b c+d`} {
		if got := notifier.Redact("echo "+text, secrets...); got != "echo <redacted>" {
			t.Errorf("Redact(%q): got %q, want it redacted", text, got)
		}
	}
	if got := notifier.Redact("at https://h/x/a/b c+d", secrets...); got != "at <redacted>" {
		t.Errorf("Redact of the URL: got %q, want the whole URL redacted at once", got)
	}
	if got := notifier.Redact("ab", secrets...); got != "ab" {
		t.Errorf("Redact of a 2-byte value: got %q, want short values left alone", got)
	}
}

// TestRedactError: the text loses its secrets, a deadline is still a
// deadline, and a Retry-After still says when, with its text redacted too.
func TestRedactError(t *testing.T) {
	const secret = "s3cr3t-token-9"
	deadline := fmt.Errorf("post https://am/?t=%s: %w", secret, context.DeadlineExceeded)
	err := notifier.RedactError(deadline, notifier.Secrets(secret)...)
	if strings.Contains(err.Error(), secret) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %q (deadline %v), want the secret gone and the deadline kept", err, errors.Is(err, context.DeadlineExceeded))
	}
	limited := fmt.Errorf("am: %w", &notifier.RetryAfterError{After: 7 * time.Second, Err: errors.New("HTTP 429 token " + secret)})
	err = notifier.RedactError(limited, notifier.Secrets(secret)...)
	var ra *notifier.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 7*time.Second || strings.Contains(ra.Error(), secret) || strings.Contains(err.Error(), secret) {
		t.Errorf("got %q (retry after %v), want a RetryAfterError of 7s without the secret", err, ra)
	}
	if notifier.RedactError(nil, secret) != nil {
		t.Error("RedactError(nil): got an error, want nil")
	}
}
