package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/config"
)

// GET /healthz answers 200 "ok" while gpuwatch samples and writes its
// state, and 503 with the reasons when the last sample, or a write the
// store has not finished or keeps refusing, is older than a few sampling
// intervals. The watchdog logs the same reasons as they start and end.
// Either way, "store: …" lines below say what damage to the store cost:
// damage gpuwatch started with, records it set aside.

// minStaleAfter is the least time without a sample (or with a write stuck
// or failing) that makes gpuwatch unhealthy, so a slow NVML call or a
// garbage collection never does.
const minStaleAfter = 30 * time.Second

// staleAfter is how old the last sample may be before gpuwatch is
// unhealthy: four sampling intervals of real time, at least minStaleAfter.
func staleAfter(cfg *config.Config) time.Duration {
	interval := cfg.Source.Interval
	if cfg.Source.Type == "sim" && cfg.Source.Sim.Speed > 0 && cfg.Source.Sim.Speed < 1 {
		interval = time.Duration(float64(interval) / cfg.Source.Sim.Speed) // slower than real time
	}
	return max(4*interval, minStaleAfter)
}

// healthProblem is one thing that makes gpuwatch unhealthy: what (a
// word that stays while it lasts) and a sentence that says it all.
type healthProblem struct{ what, text string }

// unhealthy returns what is wrong now; none when all is well.
func (d *Daemon) unhealthy() []healthProblem {
	now := d.opts.Wall()
	var problems []healthProblem
	if age := now.Sub(time.Unix(0, d.sampledAt.Load())); age > d.staleAfter && !d.sourceEnded.Load() {
		problems = append(problems, healthProblem{"sample", fmt.Sprintf("no sample for %v (source.interval %v): the source or the sampling loop is stuck",
			age.Round(time.Second), d.interval)})
	}
	w := d.db.state()
	if !w.stuckSince.IsZero() && now.Sub(w.stuckSince) > d.staleAfter {
		problems = append(problems, healthProblem{"stalled", fmt.Sprintf("a write to the store (storage.path %s) has not finished for %v: the disk is stalled; samples wait for it",
			d.storagePath, now.Sub(w.stuckSince).Round(time.Second))})
	}
	if !w.failingSince.IsZero() && now.Sub(w.failingSince) > d.staleAfter {
		problems = append(problems, healthProblem{"refused", fmt.Sprintf("the store (storage.path %s) has refused writes for %v (%v): the disk is full, read-only or failing; notifications wait in memory",
			d.storagePath, now.Sub(w.failingSince).Round(time.Second), w.lastErr)})
	}
	return problems
}

// maxHealthNotes is how many of the store's notes /healthz lists; the log
// has every one.
const maxHealthNotes = 20

func (d *Daemon) healthz(w http.ResponseWriter, _ *http.Request) {
	problems := d.unhealthy()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(problems) == 0 {
		w.Write([]byte("ok\n"))
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, p := range problems {
			fmt.Fprintf(w, "unhealthy: %s\n", p.text)
		}
	}
	notes := d.notes.list()
	for i, note := range notes {
		if i == maxHealthNotes {
			fmt.Fprintf(w, "store: and %d more (the log names each)\n", len(notes)-i)
			break
		}
		fmt.Fprintf(w, "store: %s\n", note)
	}
}

// watchdogLooks is how many times the watchdog looks in staleAfter: it
// logs a problem at most an eighth of staleAfter after it starts, and a
// daemon that has nothing to do between samples is not woken every
// second for it.
const watchdogLooks = 8

// watchdog logs what makes gpuwatch unhealthy when it starts, again every
// staleAfter (counted in its own looks, on the wall clock: a paced
// replay's clock runs faster) while it lasts, and when it ends, until ctx
// ends.
func (d *Daemon) watchdog(ctx context.Context) {
	t := time.NewTicker(max(d.staleAfter, minStaleAfter) / watchdogLooks)
	defer t.Stop()
	var said string
	looks := 0 // since the last line
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		looks++
		problems := d.unhealthy()
		var whats, texts []string
		for _, p := range problems {
			whats, texts = append(whats, p.what), append(texts, p.text)
		}
		what := strings.Join(whats, ",")
		switch {
		case what == "" && said != "":
			d.logger.Info("gpuwatch is healthy again")
		case what != "" && (what != said || looks >= watchdogLooks):
			d.logger.Error("gpuwatch is unhealthy (GET /healthz answers 503)", "problems", strings.Join(texts, "; "))
			looks = 0
		}
		said = what
	}
}
