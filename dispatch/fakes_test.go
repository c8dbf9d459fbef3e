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
	"github.com/furrowhq/furrow/store/storetest"
	"github.com/furrowhq/furrow/workflows"
)

// outbox is an in-memory furrow.Outbox with the store's leases, held to
// the PostgreSQL store by TestFakeOutboxConformance. fail, if set, may fail
// an operation ("claim", "renew", "release", "mark") before it runs.
type outbox struct {
	furrow.EventService // CreateEvent only, for the suite's fixtures
	mu                  sync.Mutex
	clock               furrow.Clock
	events              []furrow.Event
	leases              map[string]lease
	dispatched          map[string]bool
	claims              []furrow.Claim
	fullClaims          int // claims that returned events
	renewals            int
	fail                func(op string) error
	deadlines           map[string]bool // op -> every call had a deadline
}

type lease struct {
	owner uuid.UUID
	until time.Time
}

func newOutbox(clock furrow.Clock) *outbox {
	return &outbox{clock: clock, leases: map[string]lease{}, dispatched: map[string]bool{}, deadlines: map[string]bool{}}
}

// enter locks o and runs the fault hook of op.
func (o *outbox) enter(ctx context.Context, op string) error {
	o.mu.Lock()
	_, has := ctx.Deadline()
	if ok, seen := o.deadlines[op]; !seen || ok {
		o.deadlines[op] = has
	}
	if o.fail != nil {
		if err := o.fail(op); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	return nil
}

func (o *outbox) ClaimEvents(ctx context.Context, c furrow.Claim) ([]furrow.Event, error) {
	if err := o.enter(ctx, "claim"); err != nil {
		return nil, err
	}
	defer o.mu.Unlock()
	o.claims = append(o.claims, c)
	now := o.clock.Now()
	var out []furrow.Event
	for _, e := range o.events {
		l, leased := o.leases[e.ID]
		free := !leased || !l.until.After(now)
		if len(out) < c.Limit && !o.dispatched[e.ID] && free && !containsFarm(c.SkipFarms, e.FarmID) {
			o.leases[e.ID] = lease{owner: c.Owner, until: now.Add(c.Lease)}
			out = append(out, e)
		}
	}
	if len(out) > 0 {
		o.fullClaims++
	}
	return out, nil
}

func containsFarm(farms []uuid.UUID, f uuid.UUID) bool {
	for _, x := range farms {
		if x == f {
			return true
		}
	}
	return false
}

func checkIDs(ids []string) error {
	for _, id := range ids {
		if _, err := furrow.ParseEventID(id); err != nil {
			return err
		}
	}
	return nil
}

func (o *outbox) RenewLeases(ctx context.Context, owner uuid.UUID, ids []string, d time.Duration) (int, error) {
	if err := o.enter(ctx, "renew"); err != nil {
		return 0, err
	}
	defer o.mu.Unlock()
	if err := checkIDs(ids); err != nil {
		return 0, err
	}
	o.renewals++
	now, n := o.clock.Now(), 0
	for _, id := range ids {
		if l, ok := o.leases[id]; ok && l.owner == owner && l.until.After(now) && !o.dispatched[id] {
			o.leases[id] = lease{owner: owner, until: now.Add(d)}
			n++
		}
	}
	return n, nil
}

func (o *outbox) ReleaseLeases(ctx context.Context, owner uuid.UUID, ids []string) (int, error) {
	if err := o.enter(ctx, "release"); err != nil {
		return 0, err
	}
	defer o.mu.Unlock()
	if err := checkIDs(ids); err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		if l, ok := o.leases[id]; ok && l.owner == owner && !o.dispatched[id] {
			delete(o.leases, id)
			n++
		}
	}
	return n, nil
}

func (o *outbox) MarkDispatched(ctx context.Context, ids []string) error {
	if err := o.enter(ctx, "mark"); err != nil {
		return err
	}
	defer o.mu.Unlock()
	if err := checkIDs(ids); err != nil {
		return err
	}
	for _, id := range ids {
		o.dispatched[id] = true
		delete(o.leases, id)
	}
	return nil
}

func (o *outbox) add(es ...furrow.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, es...)
}

func (o *outbox) claimCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.claims)
}

func (o *outbox) fullClaimCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fullClaims
}

func (o *outbox) isDispatched(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dispatched[id]
}

func (o *outbox) leased(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.leases[id]
	return ok && l.until.After(o.clock.Now())
}

// CreateEvent stores e as waiting for the dispatcher.
func (o *outbox) CreateEvent(_ context.Context, e furrow.Event) (furrow.OutboxEvent, error) {
	if e.ID == "" {
		e.ID = furrow.NewEventID()
	}
	if e.OccurredAtMs == 0 {
		e.OccurredAtMs = furrow.Millis(o.clock.Now())
	}
	o.add(e)
	return furrow.OutboxEvent{Event: e, Pending: true}, nil
}

// The fake outbox passes the suite the PostgreSQL store passes.
func TestFakeOutboxConformance(t *testing.T) {
	storetest.Outbox(t, func(_ *testing.T, clock furrow.Clock) storetest.Subject {
		o := newOutbox(clock)
		return storetest.Subject{Outbox: o, Events: o}
	})
}

// hooks is the part of furrow.WebhookService the dispatcher uses, in
// memory, counting farm lookups; fail, if set, may fail a farm's lookup.
// TestFakeDispatchStoreConformance holds it to the PostgreSQL store.
type hooks struct {
	furrow.WebhookService
	mu          sync.Mutex
	byFarm      map[uuid.UUID][]furrow.Webhook
	lookups     int
	attempts    map[uuid.UUID]furrow.Attempt
	fail        func(farm uuid.UUID) error
	noDeadlines int
}

func (h *hooks) Webhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lookups++
	if _, ok := ctx.Deadline(); !ok {
		h.noDeadlines++
	}
	if h.fail != nil {
		if err := h.fail(farmID); err != nil {
			return nil, err
		}
	}
	return h.byFarm[farmID], nil
}

func (h *hooks) AddAttempt(_ context.Context, a furrow.Attempt) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.attempts[a.DeliveryID]; ok && old.WebhookID == a.WebhookID && old.AtMs == a.AtMs {
		return furrow.Errorf(furrow.ECONFLICT, "This attempt is already recorded.")
	}
	h.attempts[a.DeliveryID] = a
	return nil
}

// addFarm stores ws on a new farm, as storetest.DispatchSubject asks.
func (h *hooks) addFarm(_ context.Context, ws ...furrow.Webhook) (uuid.UUID, []furrow.Webhook, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	farm := uuid.New()
	for i := range ws {
		ws[i].FarmID = farm
	}
	h.byFarm[farm] = ws
	return farm, ws, nil
}

func newHooks() *hooks {
	return &hooks{byFarm: map[uuid.UUID][]furrow.Webhook{}, attempts: map[uuid.UUID]furrow.Attempt{}}
}

// The fake webhooks pass the suite the PostgreSQL store passes.
func TestFakeDispatchStoreConformance(t *testing.T) {
	storetest.DispatchStore(t, func(*testing.T) storetest.DispatchSubject {
		h := newHooks()
		return storetest.DispatchSubject{Webhooks: h, AddFarm: h.addFarm}
	})
}

// starter records starts and acts like Temporal on duplicate IDs. block,
// if set, is waited on (or the call's end) before each start.
type starter struct {
	mu          sync.Mutex
	started     map[string]client.StartWorkflowOptions
	inputs      map[string]workflows.DeliveryInput
	err         error
	block       chan struct{}
	noDeadlines int
}

func (s *starter) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, serviceerror.NewCanceled(ctx.Err().Error())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		s.noDeadlines++
	}
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

func (s *starter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.started)
}
