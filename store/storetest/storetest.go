// Package storetest holds the conformance suites of the service interfaces
// of package furrow. Each suite states, as tests, what the interface's doc
// comments promise; it runs against the PostgreSQL store (from package
// store's tests) and against the in-memory store of package
// internal/memstore that stands in for it in other packages' tests, so that
// the stand-in cannot drift from the real thing.
//
// A suite takes a New function that returns a fresh, empty implementation
// reading "now" from the given clock. Suites use only the services they
// test and those that make their fixtures (a user owns a farm; a farm holds
// devices and webhooks).
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
)

// Subject is the implementation under test, every service set.
type Subject struct {
	Users    furrow.UserService
	Farms    furrow.FarmService
	Devices  furrow.DeviceService
	Readings furrow.ReadingService
	Events   furrow.EventService
	Webhooks furrow.WebhookService
	Outbox   furrow.Outbox
}

// New returns a fresh, empty Subject whose "now" is clock's.
type New func(t *testing.T, clock furrow.Clock) Subject

// Start is the time the suites' clock shows first.
var Start = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// env is one suite run: the subject, its clock and a bounded context.
type env struct {
	t     *testing.T
	clock *testclock.Clock
	ctx   context.Context
	Subject
}

// setup makes a fresh subject for one test.
func setup(t *testing.T, newSubject New) *env {
	t.Helper()
	clock := testclock.New(Start)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, clock: clock, ctx: ctx, Subject: newSubject(t, clock)}
}

// run runs each named case on a fresh subject.
func run(t *testing.T, newSubject New, cases map[string]func(e *env)) {
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) { fn(setup(t, newSubject)) })
	}
}

// must fails the test on err.
func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// wantCode fails unless err carries the furrow error code.
func (e *env) wantCode(err error, code, what string) {
	e.t.Helper()
	if got := furrow.ErrorCode(err); got != code {
		e.t.Fatalf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

// APIServices runs the suites of every service the API depends on.
func APIServices(t *testing.T, newSubject New) {
	t.Run("UserService", func(t *testing.T) { UserService(t, newSubject) })
	t.Run("FarmService", func(t *testing.T) { FarmService(t, newSubject) })
	t.Run("DeviceService", func(t *testing.T) { DeviceService(t, newSubject) })
	t.Run("ReadingService", func(t *testing.T) { ReadingService(t, newSubject) })
	t.Run("Idempotency", func(t *testing.T) { Idempotency(t, newSubject) })
	t.Run("EventService", func(t *testing.T) { EventService(t, newSubject) })
	t.Run("WebhookService", func(t *testing.T) { WebhookService(t, newSubject) })
	t.Run("SecretRotation", func(t *testing.T) { SecretRotation(t, newSubject) })
	t.Run("WebhookTransitions", func(t *testing.T) { WebhookTransitions(t, newSubject) })
	t.Run("WebhookOwnerTools", func(t *testing.T) { WebhookOwnerTools(t, newSubject) })
	t.Run("ChainCounts", func(t *testing.T) { ChainCounts(t, newSubject) })
	t.Run("Redeliveries", func(t *testing.T) { Redeliveries(t, newSubject) })
}
