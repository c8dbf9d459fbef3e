package bench

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// pace hands out request slots to workers until the run ends: at once
// when rate is zero (full speed), otherwise on an open-loop schedule of rate
// per second, so a slow server does not slow the offered load. The run ends
// at end, or once min requests were handed out if that is later; whatever
// it has not handed out by deadline is never sent (see PaceGrace).
type pace struct {
	start, end time.Time
	deadline   time.Time
	rate       float64
	min        int64
	n          atomic.Int64 // slots asked for
	handed     atomic.Int64 // slots handed out
}

// PaceGrace is how long past its end (or past its minimum's last slot) a
// run may still send the requests it owes and wait for their answers. A
// server that stops answering would otherwise hold a paced run for as
// many client timeouts as it has slots, hours at thousands a second:
// past the grace the slots left are counted as unsent, and the requests
// still waiting are given up and counted as unanswered.
const PaceGrace = 5 * time.Second

// newPace paces a run of d from now at rate per second (0: full speed).
func newPace(d time.Duration, rate float64) *pace {
	now := time.Now()
	p := &pace{start: now, end: now.Add(d), rate: rate}
	p.deadline = p.end.Add(PaceGrace)
	return p
}

// atLeast makes the run last until n requests were handed out, past its
// end if need be, but never past PaceGrace after the later of its end and
// the n-th slot's time on a paced run.
func (p *pace) atLeast(n int64) *pace {
	p.min = n
	last := p.end
	if p.rate > 0 && n > 0 {
		last = later(last, p.due(n-1))
	}
	p.deadline = last.Add(PaceGrace)
	return p
}

// slot is a request handed out by a pace: its number and, on a paced run,
// when it was due.
type slot struct {
	i  int64
	at time.Time // zero at full speed
}

// since returns the latency of request s, sent at began and answered now.
// On a paced run it runs from when s was due, not from when it was sent:
// a worker held by a stalled server sends the slots queued behind it late,
// and timing those from their send would leave the stall out of every one
// of them (coordinated omission). At full speed it runs from the send.
func (s slot) since(began time.Time) time.Duration {
	if s.at.IsZero() {
		return time.Since(began)
	}
	return time.Since(s.at)
}

// due returns when slot i of a paced run is due.
func (p *pace) due(i int64) time.Time {
	return p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
}

// next returns the next slot once it is due; ok is false when the run is
// over, its deadline has passed or ctx has ended.
func (p *pace) next(ctx context.Context) (s slot, ok bool) {
	s.i = p.n.Add(1) - 1
	if ctx.Err() != nil || !time.Now().Before(p.deadline) {
		return s, false
	}
	if p.rate <= 0 {
		return s, p.hand(s.i < p.min || time.Now().Before(p.end))
	}
	s.at = p.due(s.i)
	if s.i >= p.min && !s.at.Before(p.end) || !s.at.Before(p.deadline) {
		return s, false
	}
	if wait := time.Until(s.at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return s, false
		}
	}
	return s, p.hand(ctx.Err() == nil && time.Now().Before(p.deadline))
}

// hand counts a slot handed out when ok.
func (p *pace) hand(ok bool) bool {
	if ok {
		p.handed.Add(1)
	}
	return ok
}

// scheduled returns how many slots the run owes: its minimum, and on a
// paced run every slot due before its end.
func (p *pace) scheduled() int64 {
	if p.rate <= 0 {
		return p.min
	}
	n := int64(math.Ceil(p.end.Sub(p.start).Seconds() * p.rate))
	for n > 0 && !p.due(n-1).Before(p.end) {
		n--
	}
	for p.due(n).Before(p.end) {
		n++
	}
	return max(n, p.min)
}

// unsent returns how many slots the run owed but never handed out.
func (p *pace) unsent() int64 { return max(0, p.scheduled()-p.handed.Load()) }

// tally is what one worker observed; workers keep their own and they are
// merged at the end, so recording takes no lock.
type tally struct {
	latencies []time.Duration
	status    map[int]int64
	failures  int64 // requests that got no HTTP answer
	lastErr   error
	// lags is, on a paced run, how late each request was handed to its
	// worker after its slot was due: the tool's own lateness.
	lags     []time.Duration
	lastSent time.Time
	// span is how long the paced runs merged here offered their load: each
	// one's length, or until its last request was sent if later.
	span   time.Duration
	unsent int64 // slots owed but never sent
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
	t.lags = append(t.lags, o.lags...)
	t.lastSent = later(t.lastSent, o.lastSent)
	t.span += o.span
	t.unsent += o.unsent
}

// sending notes that s is handed to its worker now.
func (t *tally) sending(s slot) {
	if s.at.IsZero() {
		return
	}
	now := time.Now()
	t.lags = append(t.lags, max(0, now.Sub(s.at)))
	t.lastSent = later(t.lastSent, now)
}

// runLoad runs workers that call do for each slot p hands out, and returns
// their merged tallies. Requests still waiting at p's deadline are given
// up (their ctx ends).
func runLoad(ctx context.Context, workers int, p *pace, do func(ctx context.Context, s slot, t *tally)) *tally {
	ctx, cancel := context.WithDeadline(ctx, p.deadline)
	defer cancel()
	all := &tally{status: map[int]int64{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			t := &tally{status: map[int]int64{}}
			for {
				s, ok := p.next(ctx)
				if !ok {
					break
				}
				t.sending(s)
				do(ctx, s, t)
			}
			mu.Lock()
			all.merge(t)
			mu.Unlock()
		})
	}
	wg.Wait()
	all.unsent = p.unsent()
	if p.rate > 0 {
		all.span = max(p.end.Sub(p.start), all.lastSent.Sub(p.start))
	}
	return all
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Pacing is how well a paced (open-loop) run kept its schedule. When a
// result has one, its request latencies run from each request's scheduled
// time, so that a server's stall counts for every request queued behind
// it; without one (full speed) they run from the send.
type Pacing struct {
	// Rate is the offered rate asked for, and Offered the rate achieved:
	// the requests sent over the time they took to send, the run's length
	// or longer when the last was sent late.
	Rate    float64 `json:"rate"`
	Offered float64 `json:"offered_per_second"`
	// SendLag is how late each request was sent after its slot was due:
	// the load generator's own lateness, which the latencies include.
	SendLag Summary `json:"send_lag"`
	// Short is set when Offered fell below Rate by more than
	// OfferedShortfall: the figures describe a lighter load than asked.
	Short bool `json:"short"`
}

// OfferedShortfall is how far below the asked rate the achieved one may
// fall before a run says it offered less than asked.
const OfferedShortfall = 0.03

// pacing returns how t's paced runs kept a schedule of rate per second;
// nil at full speed.
func (t *tally) pacing(rate float64) *Pacing {
	if rate <= 0 {
		return nil
	}
	p := &Pacing{Rate: rate, Offered: perSecond(int64(len(t.lags)), t.span), SendLag: Summarize(t.lags)}
	p.Short = p.Offered < (1-OfferedShortfall)*rate
	return p
}
