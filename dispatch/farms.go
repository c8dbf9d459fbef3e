package dispatch

import (
	"time"

	"github.com/google/uuid"
)

// maxSkippedFarms bounds the farms a dispatcher leaves aside at once, and
// so the size of its claim query.
const maxSkippedFarms = 1000

// farmBackoffs are the farms whose own dispatch failed, each left aside
// until its doubling wait is over, so that a farm that keeps failing
// neither delays other farms' events nor is retried in a tight loop. Other
// dispatchers still try it.
type farmBackoffs map[uuid.UUID]farmBackoff

type farmBackoff struct {
	until time.Time
	wait  time.Duration
}

// failed leaves farm aside for twice its last wait, between a second and
// maxWait.
func (f farmBackoffs) failed(farm uuid.UUID, now time.Time, maxWait time.Duration) {
	b, known := f[farm]
	if !known && len(f) >= maxSkippedFarms {
		return
	}
	b.wait = min(max(2*b.wait, time.Second), maxWait)
	b.until = now.Add(b.wait)
	f[farm] = b
}

// succeeded forgets farm's failures.
func (f farmBackoffs) succeeded(farm uuid.UUID) { delete(f, farm) }

// skipped lists the farms still waiting at now. A farm whose wait is over
// stays known, so that failing again doubles its wait.
func (f farmBackoffs) skipped(now time.Time) []uuid.UUID {
	var out []uuid.UUID
	for farm, b := range f {
		if now.Before(b.until) {
			out = append(out, farm)
		}
	}
	return out
}

// noteFarms keeps the count of farms that failed on their own since one
// last succeeded. Two or more mean the fault is likely this dispatcher's
// (a database role that cannot read webhooks, say), not the farms'. The
// caller holds d.mu.
func (d *Dispatcher) noteFarms(results []farmResult) {
	failed := 0
	for _, r := range results {
		switch {
		case r.err == nil:
			d.failStreak = 0
			return
		case r.released:
			failed++
		}
	}
	d.failStreak += failed
}

// skippedFarms lists the farms left aside now.
func (d *Dispatcher) skippedFarms() []uuid.UUID {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.farms.skipped(d.deps.Clock.Now())
}

// failingFarms is the count of farms failed on their own since one last
// succeeded.
func (d *Dispatcher) failingFarms() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failStreak
}
