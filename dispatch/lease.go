package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/furrowhq/furrow"
)

// callCtx bounds one store or Temporal call, so that a silent database or
// Temporal cannot stall the dispatcher.
func (d *Dispatcher) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.cfg.CallTimeout)
}

// keepLeased renews the leases of ids every third of the lease until ctx
// ends. A failed renewal stops the batch through stop: the leases may lapse
// and another dispatcher take the events. The channel closes when it is done.
func (d *Dispatcher) keepLeased(ctx context.Context, stop context.CancelCauseFunc, ids []string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := d.cfg.Lease / 3
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cctx, cancel := context.WithTimeout(ctx, every)
			_, err := d.deps.Outbox.RenewLeases(cctx, d.owner, ids, d.cfg.Lease)
			cancel()
			if err != nil && ctx.Err() == nil {
				stop(fmt.Errorf("renew leases: %w", err))
				return
			}
		}
	}()
	return done
}

// settle marks the pass's dispatched events, gives back every unfinished
// lease still held, and keeps the farms' backoffs. It runs even when ctx
// has ended (a shutdown), within its own deadlines.
func (d *Dispatcher) settle(ctx context.Context, results []farmResult) (Pass, error) {
	ctx = context.WithoutCancel(ctx)
	var (
		p                Pass
		done, unfinished []string
		held             []furrow.Hold
		shared           bool
	)
	now := d.deps.Clock.Now()
	d.mu.Lock()
	for _, r := range results {
		done = append(done, r.done...)
		switch {
		case r.err == nil:
			d.farms.succeeded(r.farm)
			held = append(held, r.held...)
		case r.released:
			d.farms.failed(r.farm, now, d.cfg.MaxBackoff)
			d.deps.Metrics.DispatchFarmFailed(false)
			p.FailedFarms++
			p.Released += len(r.ids) - len(r.done)
		default:
			shared = true
			unfinished = append(unfinished, without(r.ids, r.done)...)
		}
	}
	if shared {
		d.deps.Metrics.DispatchFarmFailed(true)
	}
	d.noteFarms(results)
	d.mu.Unlock()
	var err error
	if len(done) > 0 {
		cctx, cancel := d.callCtx(ctx)
		err = d.deps.Outbox.MarkDispatched(cctx, done)
		cancel()
		if err != nil {
			err = fmt.Errorf("mark dispatched: %w", err)
			unfinished, shared = append(unfinished, done...), true
		} else {
			p.Dispatched = len(done)
		}
	}
	if len(held) > 0 && !shared {
		n, herr := d.hold(ctx, held)
		p.Held = n
		d.deps.Metrics.DispatchHeld(n)
		err = errors.Join(err, herr)
	} else {
		unfinished = append(unfinished, heldIDs(held)...)
	}
	if len(unfinished) > 0 {
		n, rerr := d.giveBack(ctx, unfinished)
		p.Released += n
		err = errors.Join(err, rerr)
	}
	d.deps.Metrics.DispatchLeasesReleased(p.Released)
	p.Shared = shared
	return p, err
}

// giveBack releases the leases of ids, retrying while the database cannot
// be reached for as long as a lease lasts: after that they have expired
// anyway.
func (d *Dispatcher) giveBack(ctx context.Context, ids []string) (int, error) {
	deadline := time.Now().Add(d.cfg.Lease)
	for {
		cctx, cancel := context.WithTimeout(ctx, min(time.Until(deadline), d.cfg.CallTimeout))
		n, err := d.deps.Outbox.ReleaseLeases(cctx, d.owner, ids)
		cancel()
		if err == nil {
			return n, nil
		}
		if time.Until(deadline) < retryGiveBack {
			return 0, fmt.Errorf("give leases back: %w", err)
		}
		time.Sleep(retryGiveBack)
	}
}

// retryGiveBack is the pause between attempts to give leases back.
const retryGiveBack = 200 * time.Millisecond

// hold keeps events left unstarted for a paced webhook from every claim
// until their hold is over; then any dispatcher may take them. It returns
// how many it held. Should it fail, the leases lapse by themselves within
// a lease.
func (d *Dispatcher) hold(ctx context.Context, held []furrow.Hold) (int, error) {
	cctx, cancel := d.callCtx(ctx)
	defer cancel()
	n, err := d.deps.Outbox.HoldEvents(cctx, d.owner, held)
	if err != nil {
		return n, fmt.Errorf("hold events for a paced webhook: %w", err)
	}
	return n, nil
}

func heldIDs(held []furrow.Hold) []string {
	ids := make([]string, len(held))
	for i, h := range held {
		ids[i] = h.EventID
	}
	return ids
}
