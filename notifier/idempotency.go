package notifier

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// IdempotencyHeader is the header that carries a notification's
// IdempotencyKey on every webhook request.
const IdempotencyHeader = "Idempotency-Key"

// IdempotencyKey names the notification the same way on every try, and
// after any restart: a receiver that has seen the key has seen the
// notification, and can drop a second delivery of it (gpuwatch delivers
// at least once: a crash between a delivery and the outbox's record of
// it sends it again). It is made of what the notification is (its
// receiver, group, status, time, and each alert's key, status and time,
// or the digest's name and time), never of anything secret. Two
// notifications that differ in any of them have different keys.
func (n *Notification) IdempotencyKey() string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	at := func(t time.Time) { field(t.UTC().Format(time.RFC3339Nano)) }
	field(n.Receiver)
	field(n.GroupKey)
	field(string(n.Status))
	at(n.CreatedAt)
	for i := range n.Alerts {
		a := &n.Alerts[i]
		field(a.Key)
		field(string(a.Status))
		field(strconv.FormatBool(a.Repeat))
		at(a.At)
	}
	if n.Digest != nil {
		field(n.Digest.Name)
		field(n.Digest.Title)
	}
	return "gpuwatch-" + hex.EncodeToString(h.Sum(nil)[:16])
}
