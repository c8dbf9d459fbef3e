package dispatch

import (
	"sync"
	"time"
)

// A claim and its mark cost the database a round trip and a commit each,
// whatever they carry, and so do the farm's webhooks read between them. A
// dispatcher woken for every stored event claims them one at a time at
// moderate rates; waiting a little after a wake, while wakes keep coming,
// lets one claim carry the events of the next few. A lone event is claimed
// at once.
const (
	// defaultGather is Config.Gather's default: at 70 events a second it
	// took a delivery's machine CPU down by about 6%, for 20 ms of
	// latency (BENCHMARKS.md).
	defaultGather = 20 * time.Millisecond
	// longestGap caps one interval between wakes in their smoothed mean,
	// so that a quiet hour is forgotten after a dozen quick wakes.
	longestGap = time.Second
)

// arrivals follows how often wakes come.
type arrivals struct {
	mu   sync.Mutex
	last time.Time     // the latest wake
	gap  time.Duration // the interval between wakes, smoothed; 0 before the second
}

// note records a wake at now.
func (a *arrivals) note(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.last.IsZero() {
		d := min(max(now.Sub(a.last), 0), longestGap)
		if a.gap == 0 {
			a.gap = d
		} else {
			a.gap += (d - a.gap) / 4
		}
	}
	a.last = now
}

// steady reports whether wakes have lately come at least one per within,
// the last of them no longer than within before now: waiting within then
// gathers at least one more event, on average, into the next claim.
func (a *arrivals) steady(now time.Time, within time.Duration) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gap > 0 && a.gap <= within && now.Sub(a.last) <= within
}
