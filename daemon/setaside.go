package daemon

import (
	"fmt"
	"sync"
)

// What the store cost: Open tells what it found wrong and accepted (an
// empty file, a damaged meta page, records of its own formats it could
// not read), and the daemon sets aside the records of its buckets that it
// cannot read, rather than stop on one damaged byte. Each is logged once,
// with what the record held, and listed on /healthz for as long as the
// daemon runs.

// storeNotes is what the store cost, one line each, for /healthz.
type storeNotes struct {
	mu    sync.Mutex
	lines []string
}

func (n *storeNotes) add(line string) {
	n.mu.Lock()
	n.lines = append(n.lines, line)
	n.mu.Unlock()
}

func (n *storeNotes) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// maxLoggedValue is how much of a record set aside the log quotes.
const maxLoggedValue = 4096

// sayRecovered logs what Open found wrong with the store and accepted, and
// the records set aside before (by this run or another), and lists them
// for /healthz.
func (d *Daemon) sayRecovered() {
	for _, note := range d.db.Recovered() {
		d.logger.Warn("the store was damaged: gpuwatch started with what it could keep", "storage", d.storagePath, "what", note)
		d.notes.add(note)
	}
	kept, err := d.db.SetAsideRecords()
	if err != nil {
		d.logger.Error("cannot list the records set aside in the store", "err", err)
		return
	}
	for _, rec := range kept {
		d.notes.add("set aside: " + rec.String())
	}
}

// setAside takes the record key of bucket, which gpuwatch cannot read, out
// of the way, keeping its bytes in the store's set-aside list; gpuwatch
// goes on without it. The log says which record it was, why, and what it
// held; /healthz lists it.
func (d *Daemon) setAside(bucket, key string, why error) {
	rec, err := d.db.SetAside(bucket, key, why.Error(), d.opts.Now())
	if err != nil {
		d.logger.Error("a record gpuwatch cannot read could not be set aside; it is skipped and stays where it is",
			"bucket", bucket, "key", key, "why", why, "err", err)
		d.notes.add(fmt.Sprintf("unreadable, skipped: %s %q: %v", bucket, key, why))
		return
	}
	held := rec.Value
	if len(held) > maxLoggedValue {
		held = held[:maxLoggedValue]
	}
	d.logger.Warn("set aside a record gpuwatch cannot read: it goes on without it; the record is kept, as it was, in the store's set-aside list",
		"bucket", bucket, "key", key, "why", why, "bytes", len(rec.Value), "held", string(held))
	d.notes.add("set aside: " + rec.String())
}
