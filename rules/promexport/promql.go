package promexport

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// expr is a PromQL expression being built. atomic says it needs no
// parentheses as an operand: a selector, a call, a number, or an
// expression already in parentheses.
type expr struct {
	s      string
	atomic bool
}

// raw is an atomic expression.
func raw(s string) expr { return expr{s: s, atomic: true} }

// call is fn(args...).
func call(fn string, args ...expr) expr {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.s
	}
	return raw(fn + "(" + strings.Join(parts, ", ") + ")")
}

// operand is e as the operand of a binary operator.
func (e expr) operand() string {
	if e.atomic {
		return e.s
	}
	return "(" + e.s + ")"
}

// bin is a op b; op may carry a matching clause ("and on ()").
func bin(a expr, op string, b expr) expr { return expr{s: a.operand() + " " + op + " " + b.operand()} }

// join is xs joined by op, left to right: "a or b or c".
func join(op string, xs ...expr) expr {
	if len(xs) == 1 {
		return xs[0]
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = x.operand()
	}
	return expr{s: strings.Join(parts, " "+op+" ")}
}

// number writes v as a PromQL number literal.
func number(v float64) expr {
	switch {
	case math.IsInf(v, 1):
		return raw("+Inf")
	case math.IsInf(v, -1):
		return raw("-Inf")
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return raw(strconv.FormatFloat(v, 'f', -1, 64))
	}
	return raw(strconv.FormatFloat(v, 'g', -1, 64))
}

// rangeOf is e[d] for a selector, or the subquery (e)[d:step].
func rangeOf(e expr, d time.Duration) expr { return raw(e.s + "[" + duration(d) + "]") }

func subquery(e expr, d, step time.Duration) expr {
	return raw("(" + e.s + ")[" + duration(d) + ":" + duration(step) + "]")
}

// offset is e offset d, for a selector, a range or a subquery; a
// negative d looks forward from the evaluation time (Prometheus 2.33 and
// later).
func offset(e expr, d time.Duration) expr {
	switch {
	case d == 0:
		return e
	case d < 0:
		return raw(e.s + " offset -" + duration(-d))
	}
	return raw(e.s + " offset " + duration(d))
}

// duration writes d in Prometheus's notation: "5m", "1h30m", "4m59s999ms".
// Prometheus counts milliseconds; d is rounded to one.
func duration(d time.Duration) string {
	ms := d.Round(time.Millisecond).Milliseconds()
	if ms <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		ms   int64
	}{{"d", 24 * 3600_000}, {"h", 3600_000}, {"m", 60_000}, {"s", 1000}, {"ms", 1}} {
		if n := ms / u.ms; n > 0 {
			b.WriteString(strconv.FormatInt(n, 10) + u.name)
			ms -= n * u.ms
		}
	}
	return b.String()
}

// seconds writes d as a number of seconds.
func seconds(d time.Duration) expr { return number(d.Seconds()) }

// quote writes s as a PromQL string literal.
func quote(s string) string { return strconv.Quote(s) }
