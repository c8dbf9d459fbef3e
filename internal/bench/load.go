package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// pace hands out request numbers to workers until the run ends: at once
// when rate is zero (full speed), otherwise on an open-loop schedule of rate
// per second, so a slow server does not slow the offered load. The run ends
// at end, or once min requests were handed out if that is later.
type pace struct {
	start, end time.Time
	rate       float64
	min        int64
	n          atomic.Int64
}

func newPace(d time.Duration, rate float64) *pace {
	now := time.Now()
	return &pace{start: now, end: now.Add(d), rate: rate}
}

// atLeast makes the run last until n requests were handed out, past its
// end if need be.
func (p *pace) atLeast(n int64) *pace {
	p.min = n
	return p
}

// next returns the next request number once its slot has come; ok is false
// when the run is over or ctx has ended.
func (p *pace) next(ctx context.Context) (i int64, ok bool) {
	i = p.n.Add(1) - 1
	if p.rate <= 0 {
		return i, ctx.Err() == nil && (i < p.min || time.Now().Before(p.end))
	}
	at := p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
	if i >= p.min && !at.Before(p.end) {
		return i, false
	}
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return i, false
		}
	}
	return i, ctx.Err() == nil
}

// tally is what one worker observed; workers keep their own and they are
// merged at the end, so recording takes no lock.
type tally struct {
	latencies []time.Duration
	status    map[int]int64
	failures  int64 // requests that got no HTTP answer
	lastErr   error
}

func (t *tally) merge(o *tally) {
	t.latencies = append(t.latencies, o.latencies...)
	for k, v := range o.status {
		t.status[k] += v
	}
	t.failures += o.failures
	if o.lastErr != nil {
		t.lastErr = o.lastErr
	}
}

// runLoad runs workers that call do for each request number p hands out,
// and returns their merged tallies.
func runLoad(ctx context.Context, workers int, p *pace, do func(ctx context.Context, i int64, t *tally)) *tally {
	all := &tally{status: map[int]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			t := &tally{status: map[int]int64{}}
			for {
				i, ok := p.next(ctx)
				if !ok {
					break
				}
				do(ctx, i, t)
			}
			mu.Lock()
			all.merge(t)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all
}
