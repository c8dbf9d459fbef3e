package dispatch

import (
	"testing"
	"time"
)

func TestArrivalsSteadyOnlyWhileWakesComeOften(t *testing.T) {
	const within = 20 * time.Millisecond
	var a arrivals
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if a.steady(at, within) {
		t.Fatal("steady before any wake")
	}
	a.note(at)
	if a.steady(at, within) {
		t.Fatal("steady after a lone wake")
	}
	for range 20 {
		at = at.Add(5 * time.Millisecond)
		a.note(at)
	}
	if !a.steady(at, within) {
		t.Fatalf("not steady after wakes 5 ms apart (gap %v)", a.gap)
	}
	if a.steady(at.Add(within+time.Millisecond), within) {
		t.Fatal("still steady once the wakes have stopped for longer than within")
	}
	// After a quiet hour, a dozen or so quick wakes make it steady again.
	at = at.Add(time.Hour)
	a.note(at)
	n := 0
	for ; !a.steady(at, within) && n < 100; n++ {
		at = at.Add(5 * time.Millisecond)
		a.note(at)
	}
	if n > 15 {
		t.Fatalf("%d quick wakes after a quiet hour before steady", n)
	}
	var slow arrivals
	for range 20 {
		at = at.Add(100 * time.Millisecond)
		slow.note(at)
	}
	if slow.steady(at, within) {
		t.Fatal("steady with wakes 100 ms apart")
	}
}

// Events stored one after another, each with its wake, are claimed a few
// at a time.
func TestRunGathersSteadyWakesIntoFewerClaims(t *testing.T) {
	w := newWorld(Config{Batch: 100, Sweep: time.Hour, Gather: 200 * time.Millisecond})
	stop := w.run(t)
	const n = 50
	var last string
	for range n {
		last = w.addEvents(1)[0].ID
		w.d.Wake(w.farm)
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, func() bool { return w.isDispatched(last) })
	stop()
	if got := w.fullClaims(); got > 10 {
		t.Fatalf("%d claims took the %d events; want them gathered into a few", got, n)
	}
	if got := len(w.starter.started); got != n {
		t.Fatalf("%d workflows started for %d events", got, n)
	}
}
