package dispatch

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// slots bound the calls of a batch in flight: store calls and workflow
// starts apart, since starts wait on Temporal and would otherwise hold
// database connections' turns.
type slots struct{ store, starts *ranked }

// ranked hands out a fixed number of slots, lowest rank first and, within
// a rank, in order of asking. A farm's k-th event of a batch asks with rank
// k, so the first event of every farm goes before the second of any: a
// farm with one event is not queued behind another farm's hundred.
type ranked struct {
	mu   sync.Mutex
	free int
	wait waiters
	next uint64 // order of asking
}

func newRanked(n int) *ranked { return &ranked{free: n} }

// waiter is one call waiting for a slot; ready is closed when it has one.
type waiter struct {
	rank  int
	order uint64
	index int // in the heap; -1 once given a slot
	ready chan struct{}
}

// acquire waits for a slot, or for ctx to end.
func (r *ranked) acquire(ctx context.Context, rank int) error {
	r.mu.Lock()
	if r.free > 0 && len(r.wait) == 0 {
		r.free--
		r.mu.Unlock()
		return nil
	}
	w := &waiter{rank: rank, order: r.next, ready: make(chan struct{})}
	r.next++
	heap.Push(&r.wait, w)
	r.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	granted := w.index < 0
	if !granted {
		heap.Remove(&r.wait, w.index)
	}
	r.mu.Unlock()
	if granted {
		r.release() // given a slot as ctx ended: pass it on
	}
	return context.Cause(ctx)
}

// release gives a slot back, to the first waiter if any.
func (r *ranked) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.wait) == 0 {
		r.free++
		return
	}
	w := heap.Pop(&r.wait).(*waiter)
	w.index = -1
	close(w.ready)
}

// waiters is a heap of waiters by rank, then order of asking.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].order < h[j].order
}
func (h waiters) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiters) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

// limited runs call with a deadline of timeout once a slot of sem is free
// for rank. call runs on one of d.calls' goroutines, whose stacks have
// already grown to a start's depth.
func (d *Dispatcher) limited(ctx context.Context, sem *ranked, rank int, timeout time.Duration, call func(context.Context) error) error {
	if err := sem.acquire(ctx, rank); err != nil {
		return err
	}
	defer sem.release()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	d.calls.Go(func() { done <- call(cctx) })
	return <-done
}
