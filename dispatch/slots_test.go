package dispatch

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// Slots go to the lowest rank first, then in order of asking; a waiter
// whose context ends leaves the queue without a slot.
func TestRankedGivesLowRanksFirst(t *testing.T) {
	bg := context.Background()
	r := newRanked(1)
	if err := r.acquire(bg, 0); err != nil { // the only slot, held
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		got    []string
		wg     sync.WaitGroup
		queued int
	)
	ask := func(ctx context.Context, name string, rank int) {
		wg.Go(func() {
			err := r.acquire(ctx, rank)
			mu.Lock()
			if err != nil {
				name += " gave up"
			}
			got = append(got, name)
			mu.Unlock()
			if err == nil {
				r.release()
			}
		})
		queued++
		waitFor(t, func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.wait) == queued })
	}
	gone, cancel := context.WithCancel(bg)
	ask(bg, "second of farm A", 1)
	ask(gone, "first of farm D", 0)
	ask(bg, "first of farm B", 0)
	ask(bg, "second of farm B", 1)
	ask(bg, "first of farm C", 0)
	cancel()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 })
	r.release()
	wg.Wait()
	want := []string{"first of farm D gave up", "first of farm B", "first of farm C", "second of farm A", "second of farm B"}
	if !slices.Equal(got, want) {
		t.Fatalf("slots went %q, want %q", got, want)
	}
	if r.free != 1 || len(r.wait) != 0 {
		t.Fatalf("after all: %d free, %d waiting; want 1 and 0", r.free, len(r.wait))
	}
}
