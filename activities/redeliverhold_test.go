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

// A redelivery of a named event an hour before its day passes retention
// (POST .../redeliver {event_id}) holds the day for the chain it starts:
// the next retention run keeps the event.
func TestRedeliveryByIDHoldsTheEventsDay(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	clock := testclock.New(time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC))
	db, err := pgstore.Open(ctx, url, pgstore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
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
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: "https://hooks.example.com/in",
		Secret: furrow.NewWebhookSecret(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC).Sub(clock.Now()))

	acts := &activities.Activities{Webhooks: db, Retention: db, Redeliverer: countingRedeliverer{}, Clock: clock}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in := activities.StartRedeliveriesInput{WebhookID: hook.ID, Batch: "old", Events: []furrow.Event{e.Event}}
	v, err := env.ExecuteActivity(acts.StartRedeliveries, in)
	var res activities.StartRedeliveriesResult
	if err == nil {
		err = v.Get(&res)
	}
	if err != nil || res.Started != 1 {
		t.Fatalf("StartRedeliveries = %+v, %v", res, err)
	}

	clock.Advance(time.Hour)
	if _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Event(ctx, e.ID); err != nil {
		t.Fatalf("the redelivered event after the next retention run: %v; want it kept for its chain", err)
	}
}

// answer200 answers every request 200, as a webhook endpoint would.
type answer200 struct{}

func (answer200) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// An attempt of a chain replayed by an operator (a reset in the Temporal
// UI) for an event near its day's retention holds the day: the next
// retention run keeps the event for the chain's later attempts. One of a
// new event holds nothing.
func TestAttemptOfAnOldEventHoldsItsDay(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	clock := testclock.New(time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC))
	db, err := pgstore.Open(ctx, url, pgstore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	user, _, err := db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Replayed events")
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Stored before the webhook: no delivery waits for it in the outbox.
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: "https://hooks.example.com/in",
		Secret: furrow.NewWebhookSecret(), Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Webhooks: db, Retention: db, HTTP: &http.Client{Transport: answer200{}}, Clock: clock}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	schedule := []time.Duration{time.Minute, 3 * 24 * time.Hour} // longer than the default
	deliver := func() {
		t.Helper()
		in := activities.DeliverInput{WebhookID: hook.ID, EventID: e.ID, FirstAttempt: 1,
			Schedule: furrow.Durations(schedule)}
		if _, err := env.ExecuteActivity(acts.Deliver, in); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
	}
	deliver() // new: holds nothing
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var holds int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM event_day_holds").Scan(&holds); err != nil || holds != 0 {
		t.Fatalf("holds after an attempt of a new event: %d, %v; want 0", holds, err)
	}

	clock.Advance(time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC).Sub(clock.Now()))
	deliver()
	clock.Advance(time.Hour)
	if _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Event(ctx, e.ID); err != nil {
		t.Fatalf("the replayed event after the next retention run: %v; want it kept for its chain", err)
	}
	clock.Advance(furrow.ChainSpan(schedule) - 2*time.Hour) // past the default schedule's span
	if _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Event(ctx, e.ID); err != nil {
		t.Fatalf("the replayed event near the end of its schedule: %v; want it kept for its chain", err)
	}
}

// A paced webhook's chain for an old event told to wait for its slot (a
// redelivery queued behind many at a low max_per_second) holds the event's
// day past the wait: the attempt after it still finds the event.
func TestThrottledAttemptOfAnOldEventHoldsItsDayPastTheWait(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	clock := testclock.New(time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC))
	db, err := pgstore.Open(ctx, url, pgstore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	user, _, err := db.CreateUser(ctx, uuid.NewString()+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "Paced events")
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	rate := 0.00001 // a slot every 100,000 s
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{FarmID: farm.ID, URL: "https://hooks.example.com/in",
		Secret: furrow.NewWebhookSecret(), Enabled: true, MaxPerSecond: &rate})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Date(2031, 4, 9, 23, 0, 0, 0, time.UTC).Sub(clock.Now()))
	pacer := ratelimit.NewLocalPacer(clock)
	for range 2 { // the slots of two deliveries queued ahead
		if _, err := pacer.Reserve(ctx, hook.ID, rate); err != nil {
			t.Fatal(err)
		}
	}
	acts := &activities.Activities{Webhooks: db, Retention: db, Pacer: pacer, HTTP: &http.Client{Transport: answer200{}}, Clock: clock}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in := activities.DeliverInput{WebhookID: hook.ID, EventID: e.ID, FirstAttempt: 1, Paced: true,
		Schedule: furrow.Durations(furrow.DefaultSchedule())}
	v, err := env.ExecuteActivity(acts.Deliver, in)
	var res activities.DeliverResult
	if err == nil {
		err = v.Get(&res)
	}
	if err != nil || !res.Throttled || time.Duration(res.Wait) < furrow.ChainSpan(nil) {
		t.Fatalf("Deliver = %+v, %v; want throttled for longer than a chain's span", res, err)
	}
	clock.Advance(time.Duration(res.Wait) - time.Hour)
	if _, err := db.PruneEvents(ctx, clock.Now().Add(-furrow.AttemptRetention)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Event(ctx, e.ID); err != nil {
		t.Fatalf("the event an hour before its slot: %v; want it kept for the attempt", err)
	}
}
