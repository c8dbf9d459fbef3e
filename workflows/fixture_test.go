package workflows_test

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/workflows"
)

// store is the in-memory store with what these tests read of it.
type store struct {
	*memstore.Store
	calls *memstore.Recorder // the calls since the fixture was made
}

// rows returns the delivery log's rows in the order written.
func (s *store) rows() []furrow.Attempt { return s.calls.Attempts() }

// Writes returns the webhook states written, counter changes and
// transitions alike, in order; a superseded write wrote nothing.
func (s *store) Writes() []workflows.WebhookState {
	var out []workflows.WebhookState
	for _, c := range s.calls.Calls("SetWebhookState", "TransitionWebhook") {
		switch {
		case c.Err != nil, c.Result == true: // SetWebhookState's Result is superseded
		case c.Method == "TransitionWebhook":
			if c.Result.(furrow.OutboxEvent).ID == "" {
				continue // superseded, or written already
			}
			t := c.Args[0].(furrow.WebhookTransition)
			out = append(out, workflows.WebhookState{WebhookID: t.WebhookID, Enabled: t.Enabled, Failures: t.Failures, Seq: t.Seq})
		default:
			out = append(out, workflows.WebhookState{WebhookID: c.Args[0].(uuid.UUID), Enabled: c.Args[1].(bool), Failures: c.Args[2].(int)})
		}
	}
	return out
}

// lifecycleEvents returns the farm's lifecycle events as stored, oldest
// first.
func (s *store) lifecycleEvents(farm uuid.UUID) []furrow.Event {
	all, _, err := s.Events(context.Background(), furrow.EventFilter{FarmID: farm})
	if err != nil {
		panic(err)
	}
	var out []furrow.Event
	for _, e := range slices.Backward(all) {
		if e.Type == furrow.EventWebhookDisabled || e.Type == furrow.EventWebhookEnabled {
			out = append(out, e)
		}
	}
	return out
}

// webhook returns the webhook as stored now; the zero Webhook when gone.
func (s *store) webhook(id uuid.UUID) furrow.Webhook {
	w, _ := s.WebhookByID(context.Background(), id)
	return w
}

// setEnabled changes the webhook's flag as an operator would, keeping its
// failure count.
func (s *store) setEnabled(id uuid.UUID, enabled bool) {
	if _, err := s.SetWebhookState(context.Background(), id, enabled, s.webhook(id).ConsecutiveFailures, 0); err != nil {
		panic(err)
	}
}

// remove deletes the webhook.
func (s *store) remove(w furrow.Webhook) {
	if err := s.DeleteWebhook(context.Background(), w.FarmID, w.ID); err != nil {
		panic(err)
	}
}

// reporter records chain reports.
type reporter struct {
	mu      sync.Mutex
	reports []furrow.ChainReport
}

func (r *reporter) ReportChain(_ context.Context, c furrow.ChainReport) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, c)
	return nil
}

func (r *reporter) Reports() []furrow.ChainReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]furrow.ChainReport(nil), r.reports...)
}

// fixture is a webhook with one event in a store.
type fixture struct {
	store    *store
	reporter *reporter
	webhook  furrow.Webhook
	event    furrow.Event
}

func newFixture(url string, failures int) *fixture {
	ctx := context.Background()
	s := memstore.New(furrow.SystemClock{})
	owner, _, err := s.CreateUser(ctx, "owner@example.com")
	if err != nil {
		panic(err)
	}
	farm, err := s.CreateFarm(ctx, owner.ID, "North")
	if err != nil {
		panic(err)
	}
	w := furrow.Webhook{ID: uuid.New(), FarmID: farm.ID, URL: url, Secret: "whsec_test-secret",
		Enabled: true, ConsecutiveFailures: failures}
	e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: w.FarmID,
		OccurredAtMs: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), Data: []byte(`{"x":1}`)}
	if w, err = s.CreateWebhook(ctx, w); err != nil {
		panic(err)
	}
	if _, err := s.CreateEvent(ctx, e); err != nil {
		panic(err)
	}
	return &fixture{store: &store{Store: s, calls: s.Record()}, reporter: &reporter{}, webhook: w, event: e}
}

// deadlockBound replaces the SDK's 1 s deadlock detection in tests: on a
// loaded machine a workflow task may well take longer without being stuck.
const deadlockBound = time.Minute

// envStart is where every test environment's clock starts. Left to the
// SDK, each starts at the wall clock when made, so times a test takes
// from one environment before running another would be off by however
// long that took: enough, on a loaded machine, to put a chain's end a
// millisecond after a re-enable on the wrong side of it.
var envStart = time.Now()

// newEnv returns a test workflow environment with deadlockBound, its clock
// at envStart.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockBound})
	env.SetStartTime(envStart)
	return env
}

// minutes returns the time, in ms, m minutes after a test environment's
// start, for chain reports' ends and delivery rows.
func minutes() func(m int) int64 {
	return func(m int) int64 { return furrow.Millis(envStart.Add(time.Duration(m) * time.Minute)) }
}
