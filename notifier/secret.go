package notifier

import (
	"cmp"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// Redact replaces every secret (token, URL, signing key) in text with
// "<redacted>". Integrations pass what they hold, best made by Secrets so
// that escaped forms are caught too and a URL goes before its parts.
func Redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= minSecret {
			text = strings.ReplaceAll(text, s, "<redacted>")
		}
	}
	return text
}

// minSecret is the shortest string Redact replaces: shorter ones would
// blank out ordinary words.
const minSecret = 4

// Secrets returns values with the forms a far side may echo them in (URL
// query and path escaping, JSON's escaped slashes), longest first, so a
// whole URL is hidden before its parts. Values shorter than Redact's
// minimum are left out.
func Secrets(values ...string) []string {
	var out []string
	for _, v := range values {
		if len(v) >= minSecret {
			out = append(out, v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(v, "/", `\/`))
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// URLSecrets returns the parts of a webhook URL that are secret: the URL,
// its path and query, every query value, every path segment that looks
// like a token (webhook URLs carry theirs as a segment:
// hooks.slack.com/services/T…/B…/XXXX), and a password with the Basic
// authorization header it becomes. A far side that echoes its own token
// ("unknown webhook token XXXX") is then redacted too.
func URLSecrets(raw string) []string {
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	out = append(out, u.Path, u.RawQuery)
	for _, segment := range strings.Split(u.Path, "/") {
		if looksLikeToken(segment) {
			out = append(out, segment)
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	if p, ok := u.User.Password(); ok {
		// The client sends user:password as an Authorization: Basic header.
		out = append(out, p, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+p)))
	}
	return out
}

// looksLikeToken reports whether a URL path segment may be a credential:
// long, or with a digit or a capital, unlike the plain words of a route
// ("services", "webhooks", "open-apis").
func looksLikeToken(segment string) bool {
	if len(segment) < 8 {
		return false
	}
	return len(segment) >= 20 || strings.ContainsFunc(segment, func(r rune) bool { return unicode.IsDigit(r) || unicode.IsUpper(r) })
}

// RedactError makes err safe to log: every secret is replaced in its text
// (as Redact does). errors.Is still sees the original chain (a context
// deadline, …), and a *RetryAfterError in it stays reachable by errors.As
// with its text redacted too; nothing else of the original is exposed.
func RedactError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	e := &redactedError{msg: Redact(err.Error(), secrets...), orig: err}
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		e.retryAfter = &RetryAfterError{After: ra.After, Err: errors.New(Redact(ra.Err.Error(), secrets...))}
	}
	return e
}

// redactedError is an error whose text has its secrets replaced.
type redactedError struct {
	msg        string
	orig       error
	retryAfter *RetryAfterError
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches target, so callers can
// tell a deadline from a refusal without reading unredacted text.
func (e *redactedError) Is(target error) bool { return errors.Is(e.orig, target) }

// Unwrap exposes only the redacted RetryAfterError, if any.
func (e *redactedError) Unwrap() error {
	if e.retryAfter == nil {
		return nil
	}
	return e.retryAfter
}
