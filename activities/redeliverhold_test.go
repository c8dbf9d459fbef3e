package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
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
