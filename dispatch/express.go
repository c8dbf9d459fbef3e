package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// While a full batch is worked on, other farms' events are looked for at
// once, on each wake for a farm not in the batch (an event stored by this
// process) and at least every expressEvery (events stored by other
// processes). A look walks past the batch's farms' backlog, so looks are
// at least expressGap apart and take at most a tenth of the time: after a
// look of d, the next waits at least 10·d.
const (
	expressEvery = 250 * time.Millisecond
	expressGap   = 50 * time.Millisecond
	expressShare = 10
)

// laneResult is what the express passes beside one batch did.
type laneResult struct {
	pass Pass
	err  error
}

// startExpress dispatches, until done is closed, the events of the farms
// not in batch in passes of their own beside it, so that one farm's burst
// (a thousand devices reporting at once) holds another farm's events back
// by one look, not by the burst. They share the batch's store slots but
// have starts of their own: the batch's starts would otherwise keep them
// waiting. The channel gets the result once done is closed and the pass in
// flight has ended.
func (d *Dispatcher) startExpress(ctx context.Context, done <-chan struct{}, batch []furrow.Event, store *ranked) <-chan laneResult {
	out := make(chan laneResult, 1)
	var farms []uuid.UUID
	for _, f := range byFarm(batch) {
		farms = append(farms, f.farm)
	}
	claim := furrow.Claim{
		Owner: d.owner, Limit: max(1, d.cfg.Batch/4), Lease: d.cfg.Lease,
		// Other farms' events stored before the batch's last were older
		// than it, and so in it, unless their farm was left aside.
		FromMs: batch[len(batch)-1].OccurredAtMs,
	}
	sem := slots{store: store, starts: newRanked(max(1, d.cfg.Starts/4))}
	go func() {
		p, err := d.express(ctx, done, claim, farms, sem)
		out <- laneResult{p, err}
	}()
	return out
}

// express runs the looks of startExpress. A wake it took is handed back on
// return, so that Run does not sleep on an event stored meanwhile.
func (d *Dispatcher) express(ctx context.Context, done <-chan struct{}, claim furrow.Claim, farms []uuid.UUID, sem slots) (Pass, error) {
	var (
		total Pass
		errs  error
		woken bool
	)
	defer func() {
		if woken {
			d.signal()
		}
	}()
	for {
		began := time.Now()
		// Farms left aside after a failure, here or in the batch, stay
		// aside.
		claim.SkipFarms = append(d.skippedFarms(), farms...)
		p, err := d.expressPass(ctx, claim, sem)
		total, errs = total.add(p), errors.Join(errs, err)
		if p.Shared {
			return total, errs // the batch meets the same fault
		}
		next := began.Add(max(expressGap, expressShare*time.Since(began)))
		if !d.expressWait(ctx, done, farms, &woken, next) {
			return total, errs
		}
	}
}

// expressPass claims other farms' events and dispatches them.
func (d *Dispatcher) expressPass(ctx context.Context, claim furrow.Claim, sem slots) (Pass, error) {
	events, err := d.claim(ctx, claim)
	if err != nil {
		return Pass{Shared: true}, fmt.Errorf("beside a full batch: %w", err)
	}
	if len(events) == 0 {
		return Pass{}, nil
	}
	return d.work(ctx, events, sem)
}

// expressWait waits for a wake naming a farm not in farms, or for
// expressEvery, and then until earliest; false means done is closed or ctx
// ended. Wakes of the batch's own farms need no look: the next batch
// claims their events.
func (d *Dispatcher) expressWait(ctx context.Context, done <-chan struct{}, farms []uuid.UUID, woken *bool, earliest time.Time) bool {
	period := time.NewTimer(expressEvery)
	defer period.Stop()
	var due <-chan time.Time // set once a look is wanted
	for {
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-d.wake:
			*woken = true
			if due == nil && d.woken.takeOthers(farms) {
				due = time.After(time.Until(earliest))
			}
		case <-period.C:
			if due == nil {
				due = time.After(time.Until(earliest))
			}
		case <-due:
			return true
		}
	}
}

// maxWoken bounds the farms a dispatcher remembers wakes of; past it, any
// wake counts as one of another farm.
const maxWoken = 1024

// wokenFarms are the farms named by wakes since they were last taken.
type wokenFarms struct {
	mu    sync.Mutex
	farms map[uuid.UUID]struct{}
	many  bool // more than maxWoken
}

func (w *wokenFarms) note(farm uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.farms) >= maxWoken {
		w.many = true
		return
	}
	if w.farms == nil {
		w.farms = make(map[uuid.UUID]struct{})
	}
	w.farms[farm] = struct{}{}
}

// takeOthers forgets the farms noted and reports whether any was not in
// farms.
func (w *wokenFarms) takeOthers(farms []uuid.UUID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	other := w.many
	for f := range w.farms {
		if !slices.Contains(farms, f) {
			other = true
			break
		}
	}
	clear(w.farms)
	w.many = false
	return other
}
