package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// outbox is an in-memory furrow.Outbox without leases.
type outbox struct {
	mu         sync.Mutex
	events     []furrow.Event
	dispatched map[string]bool
	claims     int
}

func (o *outbox) ClaimEvents(_ context.Context, limit int, _ time.Duration) ([]furrow.Event, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.claims++
	var out []furrow.Event
	for _, e := range o.events {
		if !o.dispatched[e.ID] && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (o *outbox) MarkDispatched(_ context.Context, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		o.dispatched[id] = true
	}
	return nil
}

// hooks is an in-memory furrow.WebhookService counting farm lookups.
type hooks struct {
	furrow.WebhookService
	mu       sync.Mutex
	byFarm   map[uuid.UUID][]furrow.Webhook
	lookups  int
	attempts map[uuid.UUID]furrow.Attempt
}

func (h *hooks) Webhooks(_ context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	h.lookups++
	return h.byFarm[farmID], nil
}

func (h *hooks) AddAttempt(_ context.Context, a furrow.Attempt) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.attempts[a.DeliveryID]; ok {
		return furrow.Errorf(furrow.ECONFLICT, "duplicate attempt")
	}
	h.attempts[a.DeliveryID] = a
	return nil
}

// starter records starts and acts like Temporal on duplicate IDs.
type starter struct {
	mu      sync.Mutex
	started map[string]client.StartWorkflowOptions
	inputs  map[string]workflows.DeliveryInput
	err     error
}

func (s *starter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if _, ok := s.started[o.ID]; ok {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", "")
	}
	if wf != workflows.DeliveryWorkflowName || len(args) != 1 {
		return nil, errors.New("unexpected workflow")
	}
	s.started[o.ID] = o
	s.inputs[o.ID] = args[0].(workflows.DeliveryInput)
	return nil, nil
}

type world struct {
	outbox  *outbox
	hooks   *hooks
	starter *starter
	d       *Dispatcher
	farm    uuid.UUID
	on, off furrow.Webhook
}

// newWorld has one farm with an enabled webhook for every type, a disabled
// one, and an enabled one subscribed to another type only.
func newWorld(batch int) *world {
	farm := uuid.New()
	on := furrow.Webhook{ID: uuid.New(), FarmID: farm, Enabled: true}
	off := furrow.Webhook{ID: uuid.New(), FarmID: farm}
	other := furrow.Webhook{ID: uuid.New(), FarmID: farm, Enabled: true, EventTypes: []string{furrow.EventDeviceOffline}}
	w := &world{
		outbox:  &outbox{dispatched: map[string]bool{}},
		hooks:   &hooks{byFarm: map[uuid.UUID][]furrow.Webhook{farm: {on, off, other}}, attempts: map[uuid.UUID]furrow.Attempt{}},
		starter: &starter{started: map[string]client.StartWorkflowOptions{}, inputs: map[string]workflows.DeliveryInput{}},
		farm:    farm, on: on, off: off,
	}
	w.d = New(Config{Batch: batch}, Deps{Outbox: w.outbox, Webhooks: w.hooks, Starter: w.starter})
	return w
}

func (w *world) addEvents(n int) []furrow.Event {
	var es []furrow.Event
	for range n {
		e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue, FarmID: w.farm}
		es = append(es, e)
	}
	w.outbox.events = append(w.outbox.events, es...)
	return es
}

func TestDispatchStartsOnlySubscribedEnabled(t *testing.T) {
	w := newWorld(10)
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
		if !w.outbox.dispatched[e.ID] {
			t.Errorf("%s not marked dispatched", e.ID)
		}
	}
	if w.hooks.lookups != 1 {
		t.Errorf("looked up the farm's webhooks %d times, want once per batch", w.hooks.lookups)
	}
}

func TestDispatchRecordsDisabledAsSkipped(t *testing.T) {
	w := newWorld(10)
	e := w.addEvents(1)[0]
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(w.hooks.attempts) != 1 {
		t.Fatalf("attempts = %+v, want one skipped row", w.hooks.attempts)
	}
	for _, a := range w.hooks.attempts {
		if a.WebhookID != w.off.ID || a.EventID != e.ID || a.Attempt != 0 || a.Error != "skipped: webhook disabled" {
			t.Errorf("attempt = %+v", a)
		}
	}
}

func TestDispatchTwiceIsHarmless(t *testing.T) {
	w := newWorld(10)
	w.addEvents(2)
	ctx := context.Background()
	if _, err := w.d.DispatchOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// A crash before MarkDispatched: the same events come back.
	clear(w.outbox.dispatched)
	if _, err := w.d.DispatchOnce(ctx); err != nil {
		t.Fatalf("second dispatch: %v", err)
	}
	if len(w.starter.started) != 2 || len(w.hooks.attempts) != 2 || len(w.outbox.dispatched) != 2 {
		t.Fatalf("started %d, skipped rows %d, dispatched %d; want 2 each",
			len(w.starter.started), len(w.hooks.attempts), len(w.outbox.dispatched))
	}
}

func TestDispatchStartFailureLeavesEvents(t *testing.T) {
	w := newWorld(10)
	es := w.addEvents(2)
	w.starter.err = errors.New("temporal unavailable")
	if _, err := w.d.DispatchOnce(context.Background()); err == nil {
		t.Fatal("want an error")
	}
	if len(w.outbox.dispatched) != 0 {
		t.Fatalf("dispatched %v despite failed starts", w.outbox.dispatched)
	}
	w.starter.err = nil
	if _, err := w.d.DispatchOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !w.outbox.dispatched[e.ID] {
			t.Errorf("%s lost", e.ID)
		}
	}
}

func TestDispatchFullBatchReported(t *testing.T) {
	w := newWorld(2)
	w.addEvents(3)
	full, err := w.d.DispatchOnce(context.Background())
	if err != nil || !full {
		t.Fatalf("full %v err %v, want a full batch", full, err)
	}
	full, err = w.d.DispatchOnce(context.Background())
	if err != nil || full {
		t.Fatalf("full %v err %v, want the rest", full, err)
	}
}

func TestWakeCoalesces(t *testing.T) {
	w := newWorld(10)
	for range 100 {
		w.d.Wake() // must not block
	}
	if n := len(w.d.wake); n != 1 {
		t.Fatalf("%d pending wakes, want 1", n)
	}
}

func TestRunDispatchesOnWake(t *testing.T) {
	w := newWorld(10)
	w.d.cfg.Sweep = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.d.Run(ctx) }()
	waitFor(t, func() bool { return w.outbox.claimCount() >= 1 })
	w.outbox.mu.Lock()
	e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue, FarmID: w.farm}
	w.outbox.events = append(w.outbox.events, e)
	w.outbox.mu.Unlock()
	w.d.Wake()
	waitFor(t, func() bool { return w.outbox.isDispatched(e.ID) })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
}

func (o *outbox) claimCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.claims
}

func (o *outbox) isDispatched(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dispatched[id]
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
