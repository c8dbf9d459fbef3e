package activities_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
	pgstore "github.com/furrowhq/furrow/store"
)

// countingRedeliverer starts nothing and says every event started.
type countingRedeliverer struct{}

func (countingRedeliverer) StartRedeliveries(_ context.Context, _ furrow.Webhook, in activities.StartRedeliveriesInput) (int, error) {
	return len(in.Events), nil
}

// answer200 answers every request 200, as a webhook endpoint would.
type answer200 struct{}

func (answer200) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// oldEvent is an event stored on 10 March 2031 and a webhook of its farm
// (made after it, so no delivery of it waits in the outbox), in a real
// store whose clock reads 9 April 23:00: an hour before the event's day
// passes the 30 days of retention.
type oldEvent struct {
	url   string
	clock *testclock.Clock
	db    *pgstore.DB
	event furrow.Event
	hook  furrow.Webhook
}

func newOldEvent(t *testing.T, maxPerSecond *float64) oldEvent {
	t.Helper()
	ctx := context.Background()
	o := oldEvent{url: testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate}),
		clock: testclock.New(time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC))}
	db, err := pgstore.Open(ctx, o.url, pgstore.Options{Clock: o.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	o.db = db
	user, _, err := db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Old events")
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	o.event = e.Event
	o.hook, err = db.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: "https://hooks.example.com/in",
		Secret: furrow.NewWebhookSecret(), Enabled: true, MaxPerSecond: maxPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	o.clock.Advance(time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC).Sub(o.clock.Now()))
	return o
}

// kept runs retention at the clock's now and fails the test, saying when,
// unless the event is still there.
func (o oldEvent) kept(t *testing.T, when string) {
	t.Helper()
	ctx := context.Background()
	if _, err := o.db.PruneEvents(ctx, o.clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.db.Event(ctx, o.event.ID); err != nil {
		t.Fatalf("the event %s: %v; want it kept for its chain", when, err)
	}
}

// run executes the activity fn of acts with in and decodes its result.
func run[R any](t *testing.T, acts *activities.Activities, fn, in any) R {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(fn, in)
	var res R
	if err == nil {
		err = v.Get(&res)
	}
	if err != nil {
		t.Fatalf("activity: %v", err)
	}
	return res
}

// A redelivery of a named event an hour before its day passes retention
// (POST .../redeliver {event_id}) holds the day for the chain it starts:
// the next retention run keeps the event.
func TestRedeliveryByIDHoldsTheEventsDay(t *testing.T) {
	o := newOldEvent(t, nil)
	acts := &activities.Activities{Webhooks: o.db, Retention: o.db, Redeliverer: countingRedeliverer{}, Clock: o.clock}
	in := activities.StartRedeliveriesInput{WebhookID: o.hook.ID, Batch: "old", Events: []furrow.Event{o.event}}
	if res := run[activities.StartRedeliveriesResult](t, acts, acts.StartRedeliveries, in); res.Started != 1 {
		t.Fatalf("StartRedeliveries = %+v", res)
	}
	o.clock.Advance(time.Hour)
	o.kept(t, "after the next retention run")
}

// An attempt of a chain replayed by an operator (a reset in the Temporal
// UI) for an event near its day's retention holds the day for the rest of
// the chain's own schedule: later retention runs keep the event for its
// later attempts. An attempt of a new event holds nothing.
func TestAttemptOfAnOldEventHoldsItsDay(t *testing.T) {
	o := newOldEvent(t, nil)
	acts := &activities.Activities{Webhooks: o.db, Retention: o.db, HTTP: &http.Client{Transport: answer200{}}, Clock: o.clock}
	schedule := []time.Duration{time.Minute, 3 * 24 * time.Hour} // longer than the default
	in := activities.DeliverInput{WebhookID: o.hook.ID, EventID: o.event.ID, FirstAttempt: 1, Schedule: furrow.Durations(schedule)}

	fresh := newOldEvent(t, nil)
	fresh.clock.Advance(-29 * 24 * time.Hour)
	freshActs := &activities.Activities{Webhooks: fresh.db, Retention: fresh.db, HTTP: acts.HTTP, Clock: fresh.clock}
	run[activities.DeliverResult](t, freshActs, freshActs.Deliver,
		activities.DeliverInput{WebhookID: fresh.hook.ID, EventID: fresh.event.ID, FirstAttempt: 1, Schedule: in.Schedule})
	conn, err := pgx.Connect(context.Background(), fresh.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var holds int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM event_day_holds").Scan(&holds); err != nil || holds != 0 {
		t.Fatalf("holds after an attempt of a new event: %d, %v; want 0", holds, err)
	}

	run[activities.DeliverResult](t, acts, acts.Deliver, in)
	o.clock.Advance(time.Hour)
	o.kept(t, "after the next retention run")
	o.clock.Advance(furrow.ChainSpan(schedule) - 2*time.Hour) // past the default schedule's span
	o.kept(t, "near the end of its schedule")
}

// A paced webhook's chain for an old event told to wait for its slot (a
// redelivery queued behind many at a low max_per_second) holds the event's
// day past the wait: the attempt after it still finds the event.
func TestThrottledAttemptOfAnOldEventHoldsItsDayPastTheWait(t *testing.T) {
	rate := furrow.MinPerSecondBound // a slot every 1,000 s
	o := newOldEvent(t, &rate)
	pacer := ratelimit.NewLocalPacer(o.clock)
	queued := int(furrow.ChainSpan(nil)/furrow.PaceInterval(rate)) + 2
	for range queued { // the slots of the deliveries queued ahead, past a chain's span
		if _, err := pacer.Reserve(context.Background(), o.hook.ID, rate); err != nil {
			t.Fatal(err)
		}
	}
	acts := &activities.Activities{Webhooks: o.db, Retention: o.db, Pacer: pacer, HTTP: &http.Client{Transport: answer200{}}, Clock: o.clock}
	in := activities.DeliverInput{WebhookID: o.hook.ID, EventID: o.event.ID, FirstAttempt: 1, Paced: true,
		Schedule: furrow.Durations(furrow.DefaultSchedule())}
	res := run[activities.DeliverResult](t, acts, acts.Deliver, in)
	if !res.Throttled || time.Duration(res.Wait) < furrow.ChainSpan(nil) {
		t.Fatalf("Deliver = %+v; want throttled for longer than a chain's span", res)
	}
	o.clock.Advance(time.Duration(res.Wait) - time.Hour)
	o.kept(t, "an hour before its slot")
}
