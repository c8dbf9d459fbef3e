package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/furrowhq/furrow"
)

// Pass is what one DispatchOnce did.
type Pass struct {
	Claimed     int // events claimed
	Dispatched  int // events marked dispatched
	Released    int // leases given back unfinished
	Held        int // events kept leased, unstarted, for a paced webhook (see startPacer)
	FailedFarms int // farms whose own dispatch failed
	// Shared says a fault common to every farm (the database or Temporal
	// unreachable, a lease lost) stopped the pass.
	Shared bool
	// Full says the claim was full and nothing failed: more may be waiting.
	Full bool
}

// farmResult is the outcome of one farm's events in a pass.
type farmResult struct {
	farm     uuid.UUID
	ids      []string
	done     []string
	held     []furrow.Hold
	released bool // its unfinished leases were given back already
	err      error
}

// DispatchOnce claims one batch and dispatches it, farm by farm side by
// side. A farm whose dispatch fails has its unfinished claims given back at
// once and is left aside for a while; the other farms go on. A shared fault
// (the database or Temporal unreachable) stops the whole batch and gives
// every unfinished claim back. While a full batch is worked on, other
// farms' events are dispatched beside it as they come (see express). It
// returns the first error met.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (Pass, error) {
	skip := d.skippedFarms()
	d.woken.takeOthers(nil) // this claim looks for every farm
	events, err := d.claim(ctx, furrow.Claim{Owner: d.owner, Limit: d.cfg.Batch, Lease: d.cfg.Lease, SkipFarms: skip})
	if err != nil {
		return Pass{Shared: true}, err
	}
	if len(events) == 0 {
		return Pass{}, nil
	}
	full := len(events) == d.cfg.Batch
	sem := slots{store: newRanked(d.cfg.Parallel), starts: newRanked(d.cfg.Starts)}
	done := make(chan struct{})
	var lane <-chan laneResult
	if full {
		lane = d.startExpress(ctx, done, events, sem.store)
	}
	p, err := d.work(ctx, events, sem)
	close(done)
	if lane != nil {
		r := <-lane
		p, err = p.add(r.pass), errors.Join(err, r.err)
	}
	p.Full = full && err == nil
	return p, err
}

// claim leases the events c asks for, within a call's deadline.
func (d *Dispatcher) claim(ctx context.Context, c furrow.Claim) ([]furrow.Event, error) {
	cctx, cancel := d.callCtx(ctx)
	defer cancel()
	events, err := d.deps.Outbox.ClaimEvents(cctx, c)
	if err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	return events, nil
}

// work dispatches claimed events under renewed leases, then settles them.
func (d *Dispatcher) work(ctx context.Context, events []furrow.Event, sem slots) (Pass, error) {
	bctx, stop := context.WithCancelCause(ctx)
	renewing := d.keepLeased(bctx, stop, eventIDs(events))
	results := d.dispatchFarms(bctx, stop, sem, events)
	stop(nil)
	<-renewing
	p, err := d.settle(ctx, results)
	p.Claimed = len(events)
	return p, errors.Join(firstFailure(bctx, results), err)
}

// add sums two passes' counts.
func (p Pass) add(q Pass) Pass {
	p.Claimed += q.Claimed
	p.Dispatched += q.Dispatched
	p.Released += q.Released
	p.Held += q.Held
	p.FailedFarms += q.FailedFarms
	p.Shared = p.Shared || q.Shared
	return p
}

// dispatchFarms dispatches each farm's events in its own goroutine, with
// the store calls and workflow starts in flight bounded by sem. A shared
// fault stops the batch through stop.
func (d *Dispatcher) dispatchFarms(ctx context.Context, stop context.CancelCauseFunc, sem slots, events []furrow.Event) []farmResult {
	farms := byFarm(events)
	results := make([]farmResult, len(farms))
	var wg sync.WaitGroup
	for i, f := range farms {
		wg.Go(func() {
			r := farmResult{farm: f.farm, ids: eventIDs(f.events)}
			r.done, r.held, r.err = d.dispatchFarm(ctx, sem, f.farm, f.events)
			if r.err != nil && ctx.Err() == nil {
				d.farmFailed(ctx, stop, &r)
			}
			results[i] = r
		})
	}
	wg.Wait()
	return results
}

// farmFailed gives back the leases of a farm whose dispatch failed, unless
// the fault is shared: then, or if the database cannot take the leases
// back, the whole batch stops.
func (d *Dispatcher) farmFailed(ctx context.Context, stop context.CancelCauseFunc, r *farmResult) {
	if sharedFault(r.err) {
		stop(r.err)
		return
	}
	cctx, cancel := d.callCtx(context.WithoutCancel(ctx))
	defer cancel()
	if _, err := d.deps.Outbox.ReleaseLeases(cctx, d.owner, without(r.ids, r.done)); err != nil {
		stop(fmt.Errorf("%w (and giving the leases back: %v)", r.err, err))
		return
	}
	r.released = true
	d.deps.Logger.WarnContext(ctx, "dispatch of a farm failed; its events were given back",
		"farm", r.farm, "err", r.err, "dispatcher", d.owner)
}

// firstFailure is what stopped the batch, else the first farm's error.
func firstFailure(bctx context.Context, results []farmResult) error {
	if cause := context.Cause(bctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

type farmEvents struct {
	farm   uuid.UUID
	events []furrow.Event
}

// byFarm groups events by farm, keeping their order within a farm and the
// order of the farms' first events.
func byFarm(events []furrow.Event) []farmEvents {
	var out []farmEvents
	index := map[uuid.UUID]int{}
	for _, e := range events {
		i, ok := index[e.FarmID]
		if !ok {
			i = len(out)
			index[e.FarmID] = i
			out = append(out, farmEvents{farm: e.FarmID})
		}
		out[i].events = append(out[i].events, e)
	}
	return out
}

// dispatchFarm reads the farm's webhooks once (without their secrets) and
// dispatches its events, returning the ids of those fully dispatched and
// the events held for a paced webhook.
func (d *Dispatcher) dispatchFarm(ctx context.Context, sem slots, farmID uuid.UUID, events []furrow.Event) ([]string, []furrow.Hold, error) {
	var hooks []furrow.Webhook
	err := d.limited(ctx, sem.store, 0, d.cfg.CallTimeout, func(ctx context.Context) (err error) {
		hooks, err = d.deps.Webhooks.DispatchWebhooks(ctx, farmID)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("webhooks of farm %s: %w", farmID, err)
	}
	// Starts run side by side: each is a round trip to Temporal, and
	// deliveries carry no order (receivers sort on occurred_at_ms).
	var (
		mu   sync.Mutex
		done []string
		held []furrow.Hold
	)
	paced := anyPaced(hooks)
	g, gctx := errgroup.WithContext(ctx)
	for i, e := range events {
		g.Go(func() error {
			hold, err := d.dispatchEvent(gctx, sem, i, hooks, paced, e)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if hold > 0 {
				held = append(held, furrow.Hold{EventID: e.ID, For: hold})
			} else {
				done = append(done, e.ID)
			}
			return nil
		})
	}
	err = g.Wait()
	return done, held, err
}

func eventIDs(events []furrow.Event) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	return ids
}

// without returns the ids not in drop.
func without(ids, drop []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}
