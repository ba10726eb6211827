package replay

import (
	"fmt"
	"log/slog"
)

// maxNotes bounds what a log can make the reader say: a log whose header
// changes at every line must not flood the terminal.
const maxNotes = 20

// notes are what the reader tells people once about a log, beside its
// snapshots: the columns it does not read, a memory total it took from a
// GPU's name. Each is said once, as "note: FILE: …" on Options.Warnings, or
// logged.
type notes struct {
	name string
	opts *Options
	log  *slog.Logger
	said map[string]bool
	// quiet says nothing: the notes of a log read a second time, to date
	// it, were said the first time.
	quiet bool
}

// add says a note unless it was said before.
func (n *notes) add(format string, args ...any) {
	if n.quiet {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if n.said[msg] || len(n.said) >= maxNotes {
		return
	}
	if n.said == nil {
		n.said = make(map[string]bool)
	}
	n.said[msg] = true
	if w := n.opts.Warnings; w != nil {
		fmt.Fprintf(w, "note: %s: %s\n", n.name, msg)
		return
	}
	n.log.Info("replay: "+msg, "file", n.name)
}
