package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
)

// TestPacerSpacesSlotsAcrossProcesses gives two Pacers (two processes) one
// Redis: the slots they hand out for a webhook are one interval apart,
// while another webhook's first slot is now.
func TestPacerSpacesSlotsAcrossProcesses(t *testing.T) {
	c := testenv.Redis(t)
	prefix := "furrow-test:pace:" + uuid.NewString() + ":"
	a, b := NewPacer(c, prefix, nil), NewPacer(c, prefix, nil)
	ctx := context.Background()
	hook, other := uuid.New(), uuid.New()
	// When each slot comes, from the first call: no earlier than the call
	// was made plus its wait, no later than it was answered plus its wait.
	var early, late []time.Duration
	start := time.Now()
	for i := range 20 {
		p := a
		if i%2 == 1 {
			p = b
		}
		asked := time.Since(start)
		w, err := p.Reserve(ctx, hook, 10)
		if err != nil {
			t.Fatal(err)
		}
		early, late = append(early, asked+w), append(late, time.Since(start)+w)
	}
	// Slot i comes i intervals (100 ms) after the first.
	for i := range early {
		want := time.Duration(i) * 100 * time.Millisecond
		if early[i]-late[0] > want+20*time.Millisecond || late[i]-early[0] < want-20*time.Millisecond {
			t.Fatalf("slot %d at %s to %s after the first (at %s to %s), want %s", i, early[i]-late[0], late[i]-early[0], early[0], late[0], want)
		}
	}
	if w, err := a.Reserve(ctx, other, 10); err != nil || w != 0 {
		t.Fatalf("another webhook waits %s (%v), want its slot now", w, err)
	}
}

// TestPacerFallsBackToTheProcess keeps spacing slots when Redis does not
// answer, at the same rate within the process.
func TestPacerFallsBackToTheProcess(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	p := NewPacer(dead, "furrow-test:pace:", nil)
	hook := uuid.New()
	start := time.Now()
	first, err1 := p.Reserve(context.Background(), hook, 4)
	_, err2 := p.Reserve(context.Background(), hook, 4)
	// Two slots taken 250 ms apart: the next free one is at least 500 ms
	// after the first call (the failed dials take time of their own).
	next := p.local.next[hook]
	if err1 != nil || err2 != nil || first != 0 || next.Sub(start) < 500*time.Millisecond {
		t.Fatalf("without Redis: first slot in %s (%v, %v), next free %s after the start", first, err1, err2, next.Sub(start))
	}
}

func TestLocalPacer(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	l := NewLocalPacer(clock)
	hook := uuid.New()
	for i, want := range []time.Duration{0, 500 * time.Millisecond, time.Second} {
		if w, _ := l.Reserve(context.Background(), hook, 2); w != want {
			t.Fatalf("slot %d in %s, want %s", i, w, want)
		}
	}
	clock.Advance(5 * time.Second)
	if w, _ := l.Reserve(context.Background(), hook, 2); w != 0 {
		t.Fatalf("after a pause: %s, want now", w)
	}
}

// TestPacerAdmitCapsEverySecond lets at most the rate's sends through in
// any second, whichever process asks, and counts nothing it refuses. The
// sends are told gone at once, as prompt requests are.
func TestPacerAdmitCapsEverySecond(t *testing.T) {
	c := testenv.Redis(t)
	prefix := "furrow-test:pace:" + uuid.NewString() + ":"
	a, b := NewPacer(c, prefix, nil), NewPacer(c, prefix, nil)
	ctx := context.Background()
	hook := uuid.New()
	for i := range 5 {
		p := a
		if i%2 == 1 {
			p = b
		}
		id := uuid.New()
		if w, err := p.Admit(ctx, hook, 5, id); err != nil || w != 0 {
			t.Fatalf("send %d waits %s (%v)", i+1, w, err)
		}
		if err := p.Sent(ctx, hook, id); err != nil {
			t.Fatal(err)
		}
	}
	w1, _ := b.Admit(ctx, hook, 5, uuid.New())
	w2, _ := a.Admit(ctx, hook, 5, uuid.New())
	if w1 <= 800*time.Millisecond || w1 > 1010*time.Millisecond || w2 > w1 {
		t.Fatalf("the 6th and 7th sends wait %s and %s, want just under the window of 1.01s (refusals count nothing)", w1, w2)
	}
	time.Sleep(w2)
	if w, _ := b.Admit(ctx, hook, 5, uuid.New()); w != 0 {
		t.Fatalf("after the window: wait %s", w)
	}
}

// TestPacerCountsASendFromWhenItWent admits two sends at 2/s whose
// requests go out 600 ms later: until told, they hold the window, and then
// they leave it a second after they went, not after they were admitted.
func TestPacerCountsASendFromWhenItWent(t *testing.T) {
	c := testenv.Redis(t)
	p := NewPacer(c, "furrow-test:pace:"+uuid.NewString()+":", nil)
	ctx := context.Background()
	hook := uuid.New()
	first, second := uuid.New(), uuid.New()
	for _, id := range []uuid.UUID{first, second} {
		if w, err := p.Admit(ctx, hook, 2, id); err != nil || w != 0 {
			t.Fatalf("admitting: %s (%v)", w, err)
		}
	}
	if w, _ := p.Admit(ctx, hook, 2, uuid.New()); w != 1010*time.Millisecond {
		t.Fatalf("while both are on their way: wait %s, want a whole window", w)
	}
	time.Sleep(600 * time.Millisecond)
	// They went somewhere between these two instants: on a loaded
	// machine the two calls take a while.
	before := time.Now()
	_ = p.Sent(ctx, hook, first)
	_ = p.Sent(ctx, hook, second)
	after := time.Now()
	time.Sleep(500 * time.Millisecond) // 1.1 s after they were admitted
	asked := time.Now()
	w, _ := p.Admit(ctx, hook, 2, uuid.New())
	answered := time.Now()
	least := before.Add(1010 * time.Millisecond).Sub(answered)
	most := after.Add(1010 * time.Millisecond).Sub(asked)
	if w < least-20*time.Millisecond || w > most+20*time.Millisecond {
		t.Fatalf("a second after the admission: wait %s, want %s to %s (a second after they went)", w, least, most)
	}
}

func TestLocalPacerAdmit(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	l := NewLocalPacer(clock)
	ctx := context.Background()
	hook := uuid.New()
	for i := range 4 {
		id := uuid.New()
		if w, _ := l.Admit(ctx, hook, 4, id); w != 0 {
			t.Fatalf("send %d: %s", i+1, w)
		}
		_ = l.Sent(ctx, hook, id)
		clock.Advance(10 * time.Millisecond)
	}
	if w, _ := l.Admit(ctx, hook, 4, uuid.New()); w != 970*time.Millisecond {
		t.Fatalf("5th: %s, want 970ms (the window is 1.01 s)", w)
	}
	clock.Advance(970 * time.Millisecond)
	if w, _ := l.Admit(ctx, hook, 4, uuid.New()); w != 0 {
		t.Fatalf("after the window: %s", w)
	}
	slow := uuid.New() // 0.5/s: one send in 2 s
	id := uuid.New()
	l.Admit(ctx, slow, 0.5, id)
	_ = l.Sent(ctx, slow, id)
	if w, _ := l.Admit(ctx, slow, 0.5, uuid.New()); w != 2020*time.Millisecond {
		t.Fatalf("0.5/s: second send waits %s, want 2.02s", w)
	}
}

// TestLocalPacerCountsASendFromWhenItWent is
// TestPacerCountsASendFromWhenItWent in one process; and a send never told
// gone (its process died on the way, say) keeps its place for sendHold.
func TestLocalPacerCountsASendFromWhenItWent(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	l := NewLocalPacer(clock)
	ctx := context.Background()
	hook := uuid.New()
	first, second := uuid.New(), uuid.New()
	l.Admit(ctx, hook, 2, first)
	l.Admit(ctx, hook, 2, second)
	if w, _ := l.Admit(ctx, hook, 2, uuid.New()); w != 1010*time.Millisecond {
		t.Fatalf("while both are on their way: wait %s, want a whole window", w)
	}
	clock.Advance(600 * time.Millisecond)
	_ = l.Sent(ctx, hook, first)
	_ = l.Sent(ctx, hook, second)
	clock.Advance(500 * time.Millisecond)
	if w, _ := l.Admit(ctx, hook, 2, uuid.New()); w != 510*time.Millisecond {
		t.Fatalf("1.1 s after the admission: wait %s, want 510ms (a window after they went)", w)
	}

	lost := uuid.New()
	l.Admit(ctx, lost, 1, uuid.New())
	clock.Advance(sendHold)
	if w, _ := l.Admit(ctx, lost, 1, uuid.New()); w != 1010*time.Millisecond {
		t.Fatalf("a send never told gone, %s on: wait %s, want a window", sendHold, w)
	}
	clock.Advance(1010 * time.Millisecond)
	if w, _ := l.Admit(ctx, lost, 1, uuid.New()); w != 0 {
		t.Fatalf("past its hold and a window: wait %s", w)
	}
}
