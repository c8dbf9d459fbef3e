package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/workflows"
)

type world struct {
	clock   *testclock.Clock
	store   *memstore.Store
	calls   *memstore.Recorder // the store calls since the world was made
	user    uuid.UUID          // owner of the farms
	starter *starter
	metrics *recorder
	logs    *logLines
	d       *Dispatcher
	farm    uuid.UUID
	on, off furrow.Webhook
}

// newWorld has one farm with an enabled webhook for every type, a disabled
// one, and an enabled one subscribed to another type only.
func newWorld(cfg Config) *world {
	clock := testclock.New(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	return newWorldOn(cfg, clock, clock)
}

// newWorldOn is newWorld with a store reading storeClock.
func newWorldOn(cfg Config, clock *testclock.Clock, storeClock furrow.Clock) *world {
	w := &world{
		clock:   clock,
		store:   memstore.New(storeClock),
		starter: &starter{started: map[string]client.StartWorkflowOptions{}, inputs: map[string]workflows.DeliveryInput{}},
		metrics: &recorder{},
		logs:    &logLines{},
	}
	u, _, err := w.store.CreateUser(context.Background(), "owner@example.com")
	if err != nil {
		panic(err)
	}
	w.user = u.ID
	w.farm = w.addFarm()
	hooks, _ := w.store.Webhooks(context.Background(), w.farm)
	w.on, w.off = hooks[0], hooks[1]
	w.d = New(cfg, Deps{Outbox: w.store, Webhooks: w.store, Starter: w.starter, Clock: clock, Metrics: w.metrics,
		Logger: slog.New(w.logs)})
	w.calls = w.store.Record()
	return w
}

func (w *world) addFarm() uuid.UUID {
	ctx := context.Background()
	farm, err := w.store.CreateFarm(ctx, w.user, "North")
	for _, h := range []furrow.Webhook{
		{FarmID: farm.ID, Enabled: true},
		{FarmID: farm.ID},
		{FarmID: farm.ID, Enabled: true, EventTypes: []string{furrow.EventDeviceOffline}},
	} {
		if err == nil {
			_, err = w.store.CreateWebhook(ctx, h)
		}
	}
	if err != nil {
		panic(err)
	}
	return farm.ID
}

func (w *world) addEvents(n int) []furrow.Event { return w.addEventsOf(w.farm, n) }

func (w *world) addEventsOf(farm uuid.UUID, n int) []furrow.Event {
	var es []furrow.Event
	for range n {
		e, err := w.store.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventMetricValue, FarmID: farm})
		if err != nil || !e.Pending {
			panic(fmt.Sprintf("event %+v not waiting for the dispatcher: %v", e, err))
		}
		es = append(es, e.Event)
	}
	return es
}

// claimableByAnother says whether another dispatcher could claim e now.
func (w *world) claimableByAnother(t *testing.T, e furrow.Event) bool {
	t.Helper()
	return !w.leased(e.ID) && !w.held(e.ID) && !w.isDispatched(e.ID)
}

// held says whether the event is held for a paced webhook.
func (w *world) held(id string) bool {
	st, _ := w.store.OutboxState(id)
	return st.Held
}

// leased says whether a dispatcher holds a live lease of the event.
func (w *world) leased(id string) bool {
	st, _ := w.store.OutboxState(id)
	return st.LeaseOwner != uuid.Nil
}

// isDispatched says whether the event was marked dispatched.
func (w *world) isDispatched(id string) bool {
	st, _ := w.store.OutboxState(id)
	return st.Dispatched
}

// fullClaims counts the claims that returned events.
func (w *world) fullClaims() int {
	n := 0
	for _, c := range w.calls.Calls("ClaimEvents") {
		if es, _ := c.Result.([]furrow.Event); len(es) > 0 {
			n++
		}
	}
	return n
}

func TestDispatchStartsOnlySubscribedEnabled(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	es := w.addEvents(3)
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(w.starter.started) != 3 {
		t.Fatalf("started %d workflows, want 3", len(w.starter.started))
	}
	for _, e := range es {
		id := workflows.DeliveryWorkflowID(w.on.ID, e.ID)
		o, ok := w.starter.started[id]
		if !ok {
			t.Fatalf("no workflow %s", id)
		}
		if !o.EnableEagerStart || o.TaskQueue != workflows.TaskQueue || o.TypedSearchAttributes.Size() != 4 {
			t.Errorf("options of %s = %+v", id, o)
		}
		if in := w.starter.inputs[id]; in.EventID != e.ID || in.WebhookID != w.on.ID || in.EventType != e.Type {
			t.Errorf("input of %s = %+v", id, in)
		}
		if !w.isDispatched(e.ID) {
			t.Errorf("%s not marked dispatched", e.ID)
		}
	}
	if n := w.calls.Count("DispatchWebhooks"); n != 1 {
		t.Errorf("looked up the farm's webhooks %d times, want once per batch", n)
	}
}

func TestDispatchRecordsDisabledAsSkipped(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	e := w.addEvents(1)[0]
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	attempts := w.calls.Attempts()
	if len(attempts) != 1 {
		t.Fatalf("attempts = %+v, want one skipped row", attempts)
	}
	for _, a := range attempts {
		if a.WebhookID != w.off.ID || a.EventID != e.ID || a.Attempt != 0 || a.Error != "skipped: webhook disabled" {
			t.Errorf("attempt = %+v", a)
		}
	}
	if n := w.metrics.attemptCount(furrow.OutcomeSkipped); n != 1 {
		t.Errorf("counted %d skipped attempts, want the row written", n)
	}
}

func TestDispatchTwiceIsHarmless(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	es := w.addEvents(2)
	ctx := context.Background()
	// The pass stops before MarkDispatched, as a crash would: the same
	// events come back.
	w.store.Fault(memstore.Fail(errors.New("connection reset"), "MarkDispatched"))
	if _, err := w.d.DispatchOnce(ctx); err == nil {
		t.Fatal("the failed mark was not reported")
	}
	w.store.Fault(nil)
	if _, err := w.d.DispatchOnce(ctx); err != nil {
		t.Fatalf("second dispatch: %v", err)
	}
	dispatched := 0
	for _, e := range es {
		if w.isDispatched(e.ID) {
			dispatched++
		}
	}
	if len(w.starter.started) != 2 || len(w.calls.Attempts()) != 2 || dispatched != 2 {
		t.Fatalf("started %d, skipped rows %d, dispatched %d; want 2 each",
			len(w.starter.started), len(w.calls.Attempts()), dispatched)
	}
	if n := w.metrics.startedCount(); n != 2 {
		t.Errorf("counted %d workflows started, want 2: a start refused as already started is not one", n)
	}
	if n := w.metrics.attemptCount(furrow.OutcomeSkipped); n != 2 {
		t.Errorf("counted %d skipped attempts, want 2: a row recorded again is not one", n)
	}
}

func TestDispatchContinuesTheEventsTrace(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	var mu sync.Mutex
	var seen []string
	w.d = New(Config{Batch: 10}, Deps{Outbox: w.store, Webhooks: w.store, Starter: w.starter, Clock: w.clock,
		ContinueTrace: func(ctx context.Context, traceParent string) context.Context {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, traceParent)
			return ctx
		}})
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if _, err := w.store.CreateEvent(context.Background(), furrow.Event{Type: furrow.EventMetricValue, FarmID: w.farm, TraceParent: tp}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One enabled webhook subscribes to the event; its start continues the
	// event's trace.
	if len(seen) != 1 || seen[0] != tp || w.starter.count() != 1 {
		t.Fatalf("%d starts continued traces %q, want one continuing the event's", w.starter.count(), seen)
	}
}

// Temporal down is a fault every farm shares: the batch stops and every
// claim is given back at once, so another dispatcher need not wait for the
// lease.
func TestDispatchTemporalDownGivesEverythingBack(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	es := append(w.addEvents(2), w.addEventsOf(w.addFarm(), 2)...)
	w.starter.err = serviceerror.NewUnavailable("connection refused")
	p, err := w.d.DispatchOnce(context.Background())
	if err == nil || !p.Shared || p.Released != 4 || p.Dispatched != 0 {
		t.Fatalf("pass = %+v, %v; want a shared fault with 4 claims given back", p, err)
	}
	for _, e := range es {
		if !w.claimableByAnother(t, e) {
			t.Errorf("%s still leased after the failure", e.ID)
		}
	}
	if len(w.d.farms) != 0 {
		t.Errorf("farms left aside for a shared fault: %v", w.d.farms)
	}
	if w.metrics.released != 4 || w.metrics.failed[true] != 1 {
		t.Errorf("metrics: released %d, shared failures %d; want 4 and 1", w.metrics.released, w.metrics.failed[true])
	}
	w.starter.err = nil
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !w.isDispatched(e.ID) {
			t.Errorf("%s lost", e.ID)
		}
	}
}

// One farm's failed webhook lookup neither stops nor delays the other
// farms of the batch; its claims are given back at once, and the farm is
// left aside for a while so it is not retried in a tight loop.
func TestDispatchFarmFailureIsolated(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	bad := w.addFarm()
	badEvents := w.addEventsOf(bad, 2)
	good := w.addEvents(3)
	w.store.Fault(func(c memstore.Call) error {
		if c.Method == "DispatchWebhooks" && c.Args[0] == bad {
			return errors.New("store: list webhooks: permission denied")
		}
		return nil
	})
	p, err := w.d.DispatchOnce(context.Background())
	if err == nil || p.Shared || p.FailedFarms != 1 || p.Dispatched != 3 || p.Released != 2 {
		t.Fatalf("pass = %+v, %v; want one failed farm, 3 dispatched, 2 given back", p, err)
	}
	for _, e := range good {
		if !w.isDispatched(e.ID) {
			t.Errorf("event %s of the healthy farm not dispatched", e.ID)
		}
	}
	for _, e := range badEvents {
		if !w.claimableByAnother(t, e) {
			t.Errorf("event %s of the failing farm still leased", e.ID)
		}
	}
	if w.metrics.failed[false] != 1 || w.metrics.released != 2 {
		t.Errorf("metrics: farm failures %d, released %d; want 1 and 2", w.metrics.failed[false], w.metrics.released)
	}
	if !strings.Contains(w.logs.String(), "dispatch of a farm failed; its events were given back") {
		t.Errorf("the failure was not logged: %s", w.logs)
	}
	// The next pass leaves the failing farm aside and dispatches new events
	// of the healthy one.
	more := w.addEvents(1)
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if last, _ := w.calls.Last("ClaimEvents"); !slices.Contains(last.Args[0].(furrow.Claim).SkipFarms, bad) {
		t.Errorf("second claim skipped %v, want the failing farm", last.Args[0].(furrow.Claim).SkipFarms)
	}
	if !w.isDispatched(more[0].ID) {
		t.Error("the healthy farm's new event waited")
	}
	// Once its wait is over the farm is tried again, and a success clears it.
	w.store.Fault(nil)
	w.clock.Advance(time.Second)
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !w.isDispatched(badEvents[0].ID) || len(w.d.farms) != 0 {
		t.Fatalf("recovered farm: dispatched %v, left aside %v", w.isDispatched(badEvents[0].ID), w.d.farms)
	}
}

// A store error that also prevents giving the leases back means the
// database is unreachable: the whole batch stops, and its claims are given
// back as soon as the database answers again.
func TestDispatchDatabaseDownGivesBackWhenReachable(t *testing.T) {
	w := newWorld(Config{Batch: 10, Lease: 10 * time.Second})
	es := append(w.addEvents(1), w.addEventsOf(w.addFarm(), 1)...)
	var mu sync.Mutex
	down := true
	releases := 0
	w.store.Fault(func(c memstore.Call) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case c.Method == "DispatchWebhooks" && down:
			return errors.New("store: list webhooks: connection refused")
		case c.Method == "ReleaseLeases":
			releases++
			if releases == 3 {
				down = false
			}
			if releases <= 3 {
				return errors.New("connection refused")
			}
		}
		return nil
	})
	p, err := w.d.DispatchOnce(context.Background())
	if err == nil || !p.Shared || p.Released != 2 {
		t.Fatalf("pass = %+v, %v; want a shared fault, both claims given back", p, err)
	}
	for _, e := range es {
		if !w.claimableByAnother(t, e) {
			t.Errorf("%s still leased", e.ID)
		}
	}
}

func TestDispatchFullBatchReported(t *testing.T) {
	w := newWorld(Config{Batch: 2})
	w.addEvents(3)
	p, err := w.d.DispatchOnce(context.Background())
	if err != nil || !p.Full {
		t.Fatalf("pass %+v err %v, want a full batch", p, err)
	}
	p, err = w.d.DispatchOnce(context.Background())
	if err != nil || p.Full {
		t.Fatalf("pass %+v err %v, want the rest", p, err)
	}
}

// A farm's burst fills whole batches; another farm's event stored after it
// is claimed beside the first, not after the burst.
func TestDispatchFullBatchLeavesRoomForOtherFarms(t *testing.T) {
	w := newWorld(Config{Batch: 4})
	burst := w.addEvents(16)
	other := w.addEventsOf(w.addFarm(), 1)[0]
	p, err := w.d.DispatchOnce(context.Background())
	if err != nil || !p.Full || p.Dispatched != 5 {
		t.Fatalf("pass %+v err %v, want the full batch and the other farm's event", p, err)
	}
	if !w.isDispatched(other.ID) || !w.isDispatched(burst[3].ID) || w.isDispatched(burst[4].ID) {
		t.Fatal("the first pass did not dispatch the burst's 4 oldest and the other farm's event")
	}
}

// While a burst's batch waits on its starts, another farm's event stored
// meanwhile is dispatched beside it at once, not after the batch.
func TestDispatchOtherFarmsGoAheadOfAWaitingBatch(t *testing.T) {
	w := newWorld(Config{Batch: 4})
	w.addEvents(8)
	w.starter.block, w.starter.blockFarm = make(chan struct{}), w.farm
	passed := make(chan Pass, 1)
	go func() {
		p, err := w.d.DispatchOnce(context.Background())
		if err != nil {
			t.Errorf("pass: %v", err)
		}
		passed <- p
	}()
	waitFor(t, func() bool { n, _ := w.starter.waiting(); return n == 4 })
	other := w.addEventsOf(w.addFarm(), 1)[0]
	w.d.Wake(other.FarmID)
	waitFor(t, func() bool { return w.isDispatched(other.ID) })
	if n, _ := w.starter.waiting(); n != 4 {
		t.Fatalf("%d of the batch's starts waiting, want all 4: the other farm's event should not wait for them", n)
	}
	close(w.starter.block)
	if p := <-passed; p.Claimed != 5 || p.Dispatched != 5 || !p.Full {
		t.Fatalf("pass %+v, want the full batch and the other farm's event", p)
	}
	if w.fullClaims() != 2 {
		t.Fatalf("%d claims returned events, want the batch's and the other farm's", w.fullClaims())
	}
}

// Wakes of the farm whose burst is in flight cost no look for other farms:
// only wakes of other farms, and the period, do.
func TestDispatchOwnWakesDoNotLookBesideTheBatch(t *testing.T) {
	w := newWorld(Config{Batch: 4})
	w.addEvents(8)
	w.starter.block, w.starter.blockFarm = make(chan struct{}), w.farm
	defer close(w.starter.block)
	go func() { _, _ = w.d.DispatchOnce(context.Background()) }()
	waitFor(t, func() bool { n, _ := w.starter.waiting(); return n == 4 })
	waitFor(t, func() bool { return w.calls.Count("ClaimEvents") == 2 }) // the batch, the first look
	began := time.Now()
	for range 20 {
		w.d.Wake(w.farm)
		time.Sleep(5 * time.Millisecond)
	}
	periods := int(time.Since(began) / expressEvery)
	if n := w.calls.Count("ClaimEvents") - 2; n > periods {
		t.Fatalf("20 wakes of the batch's own farm made %d looks in %d periods of %s", n, periods, expressEvery)
	}
}

// In a batch, a farm's first event goes before another farm's later ones:
// with one start slot, held by one of the burst's starts, the small farm's
// event is started once the burst's first event is (any of the burst's
// events may have taken the free slot first), not after the burst.
func TestDispatchSmallFarmStartsAheadOfABurst(t *testing.T) {
	w := newWorld(Config{Batch: 9, Starts: 1})
	w.addEvents(8)
	small := w.addFarm()
	w.addEventsOf(small, 1)
	w.starter.block, w.starter.blockFarm = make(chan struct{}), w.farm
	// The small farm asks for its slot last: its webhooks are read once
	// the burst's starts wait.
	late := make(chan struct{})
	w.store.Fault(func(c memstore.Call) error {
		if c.Method == "DispatchWebhooks" && c.Args[0] == small {
			<-late
		}
		return nil
	})
	passed := make(chan error, 1)
	go func() { _, err := w.d.DispatchOnce(context.Background()); passed <- err }()
	waitFor(t, func() bool { n, _ := w.starter.waiting(); return n == 1 })
	time.Sleep(50 * time.Millisecond) // the burst's other starts queue
	close(late)
	waitFor(t, func() bool { return w.calls.Count("DispatchWebhooks") == 2 })
	time.Sleep(50 * time.Millisecond) // the small farm's start queues
	close(w.starter.block)
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	w.starter.mu.Lock()
	defer w.starter.mu.Unlock()
	if i := slices.Index(w.starter.farms, small); len(w.starter.farms) != 9 || i < 0 || i > 2 {
		t.Fatalf("the small farm's start was number %d of %d; want it among the first three", i+1, len(w.starter.farms))
	}
}

// Every store and Temporal call carries a deadline.
func TestDispatchCallsHaveDeadlines(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	w.addEvents(2)
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.addEventsOf(w.addFarm(), 1)
	w.starter.err = serviceerror.NewUnavailable("down")
	_, _ = w.d.DispatchOnce(context.Background())
	for _, op := range []string{"ClaimEvents", "MarkDispatched", "ReleaseLeases"} {
		if w.calls.Count(op) == 0 {
			t.Errorf("%s never called", op)
		}
	}
	// The dispatcher's store calls, not the test's own.
	for _, c := range w.calls.Calls("ClaimEvents", "RenewLeases", "ReleaseLeases", "MarkDispatched", "DispatchWebhooks", "AddAttempt") {
		if !c.Deadline {
			t.Errorf("%s called without a deadline", c.Method)
		}
	}
	if w.starter.noDeadlines != 0 {
		t.Errorf("calls without a deadline: %d starts", w.starter.noDeadlines)
	}
}

// A silent Temporal costs one call deadline, after which the claims are
// given back.
func TestDispatchSilentTemporalTimesOut(t *testing.T) {
	w := newWorld(Config{Batch: 10, StartTimeout: 50 * time.Millisecond})
	e := w.addEvents(1)[0]
	w.starter.block = make(chan struct{}) // never closed
	p, err := w.d.DispatchOnce(context.Background())
	if err == nil || !p.Shared || !w.claimableByAnother(t, e) {
		t.Fatalf("pass = %+v, %v; want a shared fault and the claim given back", p, err)
	}
}

// While a slow batch is worked on its leases are renewed, so no other
// dispatcher takes the events; renewal stops with the batch.
func TestDispatchRenewsLeasesOfSlowBatch(t *testing.T) {
	w := newWorld(Config{Batch: 10, Lease: 150 * time.Millisecond, StartTimeout: time.Minute})
	e := w.addEvents(1)[0]
	w.starter.block = make(chan struct{})
	done := make(chan error)
	go func() { _, err := w.d.DispatchOnce(context.Background()); done <- err }()
	waitFor(t, func() bool { return w.calls.Count("RenewLeases") >= 3 })
	if w.claimableByAnother(t, e) {
		t.Fatal("the event's lease was not kept")
	}
	close(w.starter.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := w.calls.Count("RenewLeases")
	time.Sleep(200 * time.Millisecond)
	if n := w.calls.Count("RenewLeases"); n != after || !w.isDispatched(e.ID) {
		t.Fatalf("renewals went on after the batch (%d then %d), dispatched %v", after, n, w.isDispatched(e.ID))
	}
}

// A failed renewal means the leases may lapse: the batch stops and says so.
func TestDispatchLostLeaseStopsBatch(t *testing.T) {
	w := newWorld(Config{Batch: 10, Lease: 60 * time.Millisecond, StartTimeout: time.Minute})
	w.addEvents(1)
	w.starter.block = make(chan struct{}) // only the lost lease ends the wait
	w.store.Fault(memstore.Fail(errors.New("connection refused"), "RenewLeases"))
	p, err := w.d.DispatchOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "renew leases") || !p.Shared {
		t.Fatalf("pass = %+v, %v; want the lost lease reported", p, err)
	}
}

func TestWakeCoalesces(t *testing.T) {
	w := newWorld(Config{Batch: 10})
	for range 100 {
		w.d.Wake(w.farm) // must not block
	}
	if n := len(w.d.wake); n != 1 {
		t.Fatalf("%d pending wakes, want 1", n)
	}
}

// A lone wake is claimed at once: not after the sweep, nor after Gather.
func TestRunDispatchesOnWake(t *testing.T) {
	w := newWorld(Config{Batch: 10, Sweep: time.Hour, Gather: time.Hour})
	stop := w.run(t)
	e := w.addEvents(1)[0]
	w.d.Wake(w.farm)
	waitFor(t, func() bool { return w.isDispatched(e.ID) })
	stop()
}

// run runs the dispatcher until its first claim, and returns what stops it
// and checks that Run then returned nil.
func (w *world) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.d.Run(ctx) }()
	waitFor(t, func() bool { return w.calls.Count("ClaimEvents") >= 1 })
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	}
}

// A dispatcher that keeps failing (here: every webhook lookup) waits before
// claiming again, even when woken, and says so in its log and metrics.
func TestRunBacksOffBeforeClaiming(t *testing.T) {
	// Farms are left aside in real time.
	w := newWorldOn(Config{Batch: 10, Sweep: time.Hour}, testclock.New(time.Now()), furrow.SystemClock{})
	w.d.deps.Clock = furrow.SystemClock{}
	w.addEvents(1)
	w.addEventsOf(w.addFarm(), 1)
	w.store.Fault(memstore.Fail(errors.New("store: list webhooks: permission denied"), "DispatchWebhooks"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.d.Run(ctx) }()
	stopWaking := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(stopWaking) {
		w.d.Wake(w.farm)
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Work claimed at 0 s and, after a 1 s wait, at about 1 s; then a 2 s
	// wait. Without the backoff every wake would claim it again.
	if n := w.fullClaims(); n < 1 || n > 2 {
		t.Fatalf("%d claims took work in 1.5 s of wakes; want at most 2 with the backoff", n)
	}
	if !strings.Contains(w.logs.String(), "dispatch failed; waiting before claiming again") {
		t.Errorf("the backoff was not logged: %s", w.logs)
	}
	if w.metrics.lastBackoff() < time.Second {
		t.Errorf("metrics saw backoff %v, want at least 1s", w.metrics.lastBackoff())
	}
}

// A dispatcher whose claims failed recovers at its first clean pass even
// when the outbox is empty by then: its backoff gauge goes back to 0.
func TestRunRecoversWithAnEmptyOutbox(t *testing.T) {
	w := newWorldOn(Config{Batch: 10, Sweep: 50 * time.Millisecond}, testclock.New(time.Now()), furrow.SystemClock{})
	w.d.deps.Clock = furrow.SystemClock{}
	w.store.Fault(memstore.Fail(errors.New("connection refused"), "ClaimEvents"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.d.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for w.metrics.lastBackoff() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.metrics.lastBackoff() == 0 {
		cancel()
		<-done
		t.Fatal("the failing claims never backed off")
	}
	w.store.Fault(nil)
	for w.metrics.lastBackoff() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := w.metrics.lastBackoff(); b != 0 {
		t.Fatalf("backoff gauge %v after clean passes over an empty outbox; want 0", b)
	}
	if !strings.Contains(w.logs.String(), "dispatch recovered") {
		t.Errorf("the recovery was not logged: %s", w.logs)
	}
}

// On shutdown the dispatcher gives back the claims of its batch in flight.
func TestRunGivesClaimsBackOnShutdown(t *testing.T) {
	w := newWorld(Config{Batch: 10, Lease: time.Hour, StartTimeout: time.Hour})
	es := w.addEvents(3)
	w.starter.block = make(chan struct{}) // never closed: the batch is stuck
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.d.Run(ctx) }()
	waitFor(t, func() bool { return w.leased(es[0].ID) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !w.claimableByAnother(t, e) {
			t.Errorf("%s still leased after shutdown", e.ID)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder is a Metrics that remembers what it was told.
type recorder struct {
	mu       sync.Mutex
	started  int
	failed   map[bool]int
	released int
	held     int
	backoffs []time.Duration
	attempts map[string]int
}

func (r *recorder) DeliveryAttempt(result string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts == nil {
		r.attempts = map[string]int{}
	}
	r.attempts[result]++
}

func (r *recorder) attemptCount(result string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[result]
}

func (r *recorder) WorkflowStarted() { r.mu.Lock(); r.started++; r.mu.Unlock() }
func (r *recorder) startedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

func (r *recorder) DispatchFarmFailed(shared bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = map[bool]int{}
	}
	r.failed[shared]++
}
func (r *recorder) DispatchLeasesReleased(n int) { r.mu.Lock(); r.released += n; r.mu.Unlock() }
func (r *recorder) DispatchHeld(n int)           { r.mu.Lock(); r.held += n; r.mu.Unlock() }
func (r *recorder) DispatchBackingOff(d time.Duration) {
	r.mu.Lock()
	r.backoffs = append(r.backoffs, d)
	r.mu.Unlock()
}
func (r *recorder) lastBackoff() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.backoffs) == 0 {
		return 0
	}
	return r.backoffs[len(r.backoffs)-1]
}

// logLines is a slog.Handler keeping each record's message and
// attributes as one line, safe for concurrent use.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	return nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestStartsInFlightApartFromStoreCalls: a batch keeps cfg.Starts workflow
// starts waiting on Temporal at once, more than its cfg.Parallel store
// calls, and never more.
func TestStartsInFlightApartFromStoreCalls(t *testing.T) {
	w := newWorld(Config{Parallel: 2, Starts: 8})
	w.addEvents(20)
	w.starter.block = make(chan struct{})
	done := make(chan Pass)
	go func() {
		p, _ := w.d.DispatchOnce(context.Background())
		done <- p
	}()
	deadline := time.Now().Add(10 * time.Second)
	for now, _ := w.starter.waiting(); now < 8; now, _ = w.starter.waiting() {
		if time.Now().After(deadline) {
			t.Fatalf("%d starts in flight after 10 s, want 8", now)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // room for a ninth, which must not come
	close(w.starter.block)
	p := <-done
	if _, most := w.starter.waiting(); most != 8 || p.Dispatched != 20 || w.starter.count() != 20 {
		t.Errorf("at most %d starts in flight, %d events dispatched, %d started; want 8, 20, 20", most, p.Dispatched, w.starter.count())
	}
}
