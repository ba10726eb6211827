package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpuwatch/gpuwatch/notifier"
)

// record is what the MessageStore keeps under "receiver/alert key": the
// message that announced the alert and every alert the message shows, so
// a resolve can re-render it with that alert marked resolved and the others
// as they were.
//
// Records of resolved alerts are kept, marked resolved, until the alert
// fires again and a new record replaces them: a retried notification then
// finds its work done and posts nothing twice. The store holds at most one
// record per alert and receiver.
type record struct {
	Channel string           `json:"channel"`
	TS      string           `json:"ts"`
	Alerts  []notifier.Alert `json:"alerts"`
	// Replied maps an alert key to the At of the last repeat replied in
	// the thread, so a retried repeat does not reply twice.
	Replied map[string]time.Time `json:"replied,omitempty"`
	// ReplyPending maps an alert key to the At of its resolve whose
	// thread reply was about to be posted when the record was written:
	// a retry finds out whether it was (see finishResolvedReply).
	ReplyPending map[string]time.Time `json:"reply_pending,omitempty"`
	// Through is the outbox ID of the last notification that wrote the
	// record. A receiver's notifications are delivered in the order of
	// their IDs, so one with a lower ID is an earlier one delivered
	// again (a crash before the outbox recorded its delivery): its work
	// is done, and the record already tells what came after it.
	Through uint64 `json:"through,omitempty"`
}

// entry returns the record's copy of the alert with key, or nil.
func (r *record) entry(key string) *notifier.Alert {
	for i := range r.Alerts {
		if r.Alerts[i].Key == key {
			return &r.Alerts[i]
		}
	}
	return nil
}

func encodeRecord(r *record) ([]byte, error) {
	return json.Marshal(r)
}

// decodeRecord reads a stored record; a record without its message's
// channel and ts is useless and an error.
func decodeRecord(b []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode slack message record: %w", err)
	}
	if r.Channel == "" || r.TS == "" || len(r.Alerts) == 0 {
		return nil, errors.New("decode slack message record: no channel, ts or alerts")
	}
	return &r, nil
}

// recordKey is where the record of an alert lives: records of different
// receivers never meet.
func (n *Notifier) recordKey(alertKey string) string {
	return n.name + "/" + alertKey
}

// load returns the record of an alert, or nil when there is none. A
// record the store refused to save is found in memory. A store that fails
// must not stop a delivery: the failure is logged and the alert gets a new
// message. A record that cannot be read is set aside, and the alert gets a
// new message. The caller holds n.mu.
func (n *Notifier) load(alertKey string) *record {
	if n.opts.Messages == nil {
		return nil
	}
	key := n.recordKey(alertKey)
	b, ok := n.unsaved[key]
	if !ok {
		var err error
		b, ok, err = n.opts.Messages.Get(key)
		if err != nil {
			n.log.Warn("slack message record not read: the alert gets a new message", "receiver", n.name, "key", key, "err", n.redact(err))
			return nil
		}
	}
	if !ok {
		return nil
	}
	r, err := decodeRecord(b)
	if err != nil {
		delete(n.unsaved, key)
		n.opts.Messages.SetAside(key, fmt.Errorf("%w: the alert gets a new message", err))
		return nil
	}
	return r
}

// save stores r under the alert keys. The message is already in Slack, so
// a store failure is logged, never returned: returning it would make the
// outbox post the message again. A record the store refuses is kept in
// memory, where load finds it, and written with the next save: while the
// process lives, a sick store never makes an alert a second message. The
// caller holds n.mu.
func (n *Notifier) save(r *record, alertKeys []string) {
	if n.opts.Messages == nil || r.Channel == "" || r.TS == "" || len(alertKeys) == 0 {
		return
	}
	r.Through = max(r.Through, n.delivering)
	b, err := encodeRecord(r)
	if err != nil {
		n.log.Warn("slack message record not encoded", "receiver", n.name, "err", err)
		return
	}
	for _, k := range alertKeys {
		n.unsaved[n.recordKey(k)] = b
	}
	n.flushUnsaved()
}

// flushUnsaved writes the records the store refused before; those it
// refuses again stay in memory.
func (n *Notifier) flushUnsaved() {
	for _, key := range slices.Sorted(maps.Keys(n.unsaved)) {
		if err := n.opts.Messages.Put(key, n.unsaved[key]); err != nil {
			n.log.Warn("slack message record not saved: kept in memory until the store takes it; a restart before then makes the alert's next transition a new message",
				"receiver", n.name, "key", key, "unsaved", len(n.unsaved), "err", n.redact(err))
			return // the store refuses: the others would fail alike
		}
		delete(n.unsaved, key)
	}
}

func (n *Notifier) redact(err error) string {
	return notifier.Redact(err.Error(), n.secrets...)
}
