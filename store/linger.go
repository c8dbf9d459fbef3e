package store

import "time"

const (
	// maxLinger is the longest a writer waits for more readings before a
	// statement. At a million devices' peak (3,333 readings/s) a statement
	// of one or two readings cost PostgreSQL twice the CPU per reading of
	// one of eight, for 1 ms more of latency (BENCHMARKS.md).
	maxLinger = time.Millisecond
	// lingerBatch is the batch a writer waits to fill: about where a
	// statement's own cost stops outweighing its rows'.
	lingerBatch = 8
	// lingerAhead is how many more readings the arrival rate must promise
	// within maxLinger for a wait to be worth it: below, a reading would
	// mostly wait out the linger alone. At one, the writer waits from
	// 1,000 readings/s, about a million devices' mean rate, where pairs
	// cost a quarter less CPU a reading than ones for 1.7 ms more at the
	// median (BENCHMARKS.md).
	lingerAhead = 1
)

// linger decides whether a writer waits for more readings before
// committing a small batch. It waits only while readings keep arriving
// faster than lingerAhead per maxLinger and batches keep coming small, so
// a lone reading at a low rate is never held, and full speed, where
// readings queue while each statement runs, is left to its natural
// batches: a small batch just after a large one is the wave's stragglers.
type linger struct {
	rate      float64   // readings per second, smoothed
	since     time.Time // when the last batch was gathered
	taken     int       // readings taken since then
	lastSmall bool      // the last batch was gathered smaller than lingerBatch
}

// wait is told that a batch of n readings was gathered at now, without
// waiting, and returns how long to wait for more: zero for not at all.
func (l *linger) wait(n int, now time.Time) time.Duration {
	l.taken += n
	if !l.since.IsZero() {
		if elapsed := now.Sub(l.since).Seconds(); elapsed > 0 {
			// An exponential average over about five batches.
			l.rate += 0.2 * (float64(l.taken)/elapsed - l.rate)
		}
	}
	l.since, l.taken = now, 0
	small, wasSmall := n < lingerBatch, l.lastSmall
	l.lastSmall = small
	if !small || !wasSmall || l.rate*maxLinger.Seconds() < lingerAhead {
		return 0
	}
	return min(maxLinger, time.Duration(float64(lingerBatch-n)/l.rate*float64(time.Second)))
}

// took counts readings added to the batch while waiting.
func (l *linger) took(n int) { l.taken += n }
