package workflows_test

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// store is an in-memory furrow.WebhookService and furrow.EventService.
type store struct {
	furrow.WebhookService
	furrow.EventService
	mu       sync.Mutex
	hooks    map[uuid.UUID]furrow.Webhook
	events   map[string]furrow.Event
	attempts []furrow.Attempt
	writes   []workflows.WebhookState
}

func newStore() *store {
	return &store{hooks: map[uuid.UUID]furrow.Webhook{}, events: map[string]furrow.Event{}}
}

func (s *store) WebhookByID(_ context.Context, id uuid.UUID) (furrow.Webhook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.hooks[id]
	if !ok {
		return w, furrow.Errorf(furrow.ENOTFOUND, "webhook not found")
	}
	return w, nil
}

func (s *store) SetWebhookState(_ context.Context, id uuid.UUID, enabled bool, failures int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.hooks[id]
	if !ok {
		return furrow.Errorf(furrow.ENOTFOUND, "webhook not found")
	}
	w.Enabled, w.ConsecutiveFailures = enabled, failures
	s.hooks[id] = w
	s.writes = append(s.writes, workflows.WebhookState{WebhookID: id, Enabled: enabled, Failures: failures})
	return nil
}

func (s *store) AddAttempt(_ context.Context, a furrow.Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, a)
	return nil
}

func (s *store) Event(_ context.Context, id string) (furrow.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.events[id]
	if !ok {
		return e, furrow.Errorf(furrow.ENOTFOUND, "event not found")
	}
	return e, nil
}

func (s *store) setEnabled(id uuid.UUID, enabled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.hooks[id]
	w.Enabled = enabled
	s.hooks[id] = w
}

func (s *store) rows() []furrow.Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]furrow.Attempt(nil), s.attempts...)
}

func (s *store) Writes() []workflows.WebhookState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]workflows.WebhookState(nil), s.writes...)
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
	s := newStore()
	w := furrow.Webhook{ID: uuid.New(), FarmID: uuid.New(), URL: url, Secret: "whsec_test-secret",
		Enabled: true, ConsecutiveFailures: failures}
	e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: w.FarmID,
		OccurredAtMs: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), Data: []byte(`{"x":1}`)}
	s.hooks[w.ID], s.events[e.ID] = w, e
	return &fixture{store: s, reporter: &reporter{}, webhook: w, event: e}
}

// deadlockBound replaces the SDK's 1 s deadlock detection in tests: on a
// loaded machine a workflow task may well take longer without being stuck.
const deadlockBound = time.Minute

// newEnv returns a test workflow environment with deadlockBound.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: deadlockBound})
	return env
}
