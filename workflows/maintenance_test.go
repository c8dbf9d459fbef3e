package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
	pgstore "github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/workflows"
)

func maintenanceStore(t *testing.T) (*pgstore.DB, *testclock.Clock) {
	t.Helper()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	clock := testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, err := pgstore.Open(context.Background(), url, pgstore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, clock
}

func runSweep(t *testing.T, db *pgstore.DB, clock furrow.Clock, offlineAfter time.Duration) int {
	t.Helper()
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Devices: db, Clock: clock})
	env.ExecuteWorkflow(workflows.SweepDevices, workflows.SweepDevicesInput{OfflineAfter: furrow.Duration(offlineAfter)})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("sweep: %v", env.GetWorkflowError())
	}
	var r activities.SweepDevicesResult
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r.Marked
}

func TestDeviceReportingStates(t *testing.T) {
	ctx := context.Background()
	db, clock := maintenanceStore(t)
	th := furrow.Thresholds{StaleAfter: 30 * time.Minute, OfflineAfter: 2 * time.Hour}
	farm, dev := farmDevice(t, db)
	status := func() string {
		t.Helper()
		ds, _, err := db.Devices(ctx, furrow.DeviceFilter{FarmID: farm.ID})
		if err != nil || len(ds) != 1 {
			t.Fatalf("devices: %v %v", ds, err)
		}
		return ds[0].Status(clock.Now(), th)
	}
	post := func() {
		t.Helper()
		if _, _, err := db.CreateReading(ctx, furrow.Reading{DeviceID: dev.ID, FarmID: farm.ID, MetricID: 220, Value: "30"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	offlineEvents := func() []furrow.Event {
		t.Helper()
		es, _, err := db.Events(ctx, furrow.EventFilter{FarmID: farm.ID, Type: furrow.EventDeviceOffline, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}

	if s := status(); s != furrow.DeviceNever {
		t.Fatalf("before any reading: %s", s)
	}
	post()
	lastSeen := clock.Now().UnixMilli()
	if s := status(); s != furrow.DeviceReporting {
		t.Fatalf("after a reading: %s", s)
	}
	clock.Advance(31 * time.Minute)
	if s := status(); s != furrow.DeviceStale {
		t.Fatalf("after 31 min: %s", s)
	}
	if n := runSweep(t, db, clock, th.OfflineAfter); n != 0 {
		t.Fatalf("a stale device was marked offline (%d)", n)
	}
	clock.Advance(90 * time.Minute)
	if n := runSweep(t, db, clock, th.OfflineAfter); n != 1 {
		t.Fatalf("first sweep past the threshold marked %d", n)
	}
	if n := runSweep(t, db, clock, th.OfflineAfter); n != 0 {
		t.Fatalf("second sweep marked %d again", n)
	}
	if s := status(); s != furrow.DeviceOffline {
		t.Fatalf("after the sweep: %s", s)
	}
	es := offlineEvents()
	if len(es) != 1 {
		t.Fatalf("%d device.offline events, want 1", len(es))
	}
	var data furrow.DeviceOfflineData
	if err := json.Unmarshal(es[0].Data, &data); err != nil || data.DeviceID != dev.ID || data.LastSeenMs != lastSeen || data.OfflineAfterMs != th.OfflineAfter.Milliseconds() {
		t.Fatalf("event data %s (%v)", es[0].Data, err)
	}

	post()
	if s := status(); s != furrow.DeviceReporting {
		t.Fatalf("after a new reading: %s", s)
	}
	clock.Advance(2*time.Hour + time.Minute)
	if n := runSweep(t, db, clock, th.OfflineAfter); n != 1 {
		t.Fatalf("second episode marked %d", n)
	}
	if n := len(offlineEvents()); n != 2 {
		t.Fatalf("%d device.offline events after two episodes, want 2", n)
	}
}

func TestRetentionRemovesOldAttemptsKeepsNew(t *testing.T) {
	ctx := context.Background()
	db, clock := maintenanceStore(t)
	user, _, _ := db.CreateUser(ctx, "o@example.com")
	farm, err := db.CreateFarm(ctx, user.ID, "farm")
	if err != nil {
		t.Fatal(err)
	}
	hook, err := db.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: farm.ID, URL: "https://example.com/h", Secret: "whsec_x", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	old := clock.Now().Add(-40 * 24 * time.Hour).UnixMilli()
	recent := clock.Now().Add(-2 * 24 * time.Hour).UnixMilli()
	for _, at := range []int64{old, old + 1000, recent} {
		a := furrow.Attempt{WebhookID: hook.ID, EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: at}
		if err := db.AddAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: db, Retention: db, Clock: clock})
	env.ExecuteWorkflow(workflows.Retention, workflows.RetentionInput{Keep: furrow.Duration(furrow.AttemptRetention)})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var r activities.PruneResult
	if err := env.GetWorkflowResult(&r); err != nil || r.Attempts != 2 {
		t.Fatalf("removed %d attempts (%v), want 2", r.Attempts, err)
	}
	left, _, err := db.Attempts(ctx, furrow.AttemptFilter{WebhookID: hook.ID, Limit: 100})
	if err != nil || len(left) != 1 || left[0].AtMs != recent {
		t.Fatalf("left %+v (%v)", left, err)
	}
}

func TestRetentionDropsExpiredReadingsOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	url := testenv.NewDatabase(t, testenv.Migrator{Digest: pgstore.MigrationsDigest(), Migrate: pgstore.Migrate})
	// Far past any template's partitioning boundary, so readings go to day
	// partitions.
	clock := testclock.New(time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC))
	db, err := pgstore.Open(ctx, url, pgstore.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	farm, dev := farmDevice(t, db)
	store := func(v string) {
		if _, _, err := db.CreateReading(ctx, furrow.Reading{FarmID: farm.ID, DeviceID: dev.ID, MetricID: 1, Value: v}, nil); err != nil {
			t.Fatal(err)
		}
	}
	store("old") // 1 January
	clock.Advance(38 * 24 * time.Hour)
	store("recent") // 8 February
	clock.Advance(2 * 24 * time.Hour)
	values := func() []string {
		rs, _, err := db.Readings(ctx, furrow.ReadingFilter{FarmID: farm.ID})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.Value)
		}
		return out
	}
	run := func(keep time.Duration) {
		env := newEnv()
		env.RegisterActivity(&activities.Activities{Webhooks: db, Retention: db, Clock: clock})
		env.ExecuteWorkflow(workflows.Retention, workflows.RetentionInput{Keep: furrow.Duration(furrow.AttemptRetention), KeepReadings: furrow.Duration(keep)})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
	}
	run(0)
	if got := values(); len(got) != 2 {
		t.Fatalf("readings kept forever: %v, want both", got)
	}
	run(30 * 24 * time.Hour)
	if got := values(); len(got) != 1 || got[0] != "recent" {
		t.Fatalf("readings after a 30-day retention: %v, want only the recent one", got)
	}
}

// failingAttempts is the real store but for the delivery log's retention.
type failingAttempts struct{ *pgstore.DB }

func (failingAttempts) PruneAttempts(context.Context, time.Time) (int64, error) {
	return 0, errors.New("the delivery log is unreachable")
}

// One table's failure never stops the other steps of retention, and still
// fails the run.
func TestRetentionRunsEveryStepWhenOneFails(t *testing.T) {
	ctx := context.Background()
	db, clock := maintenanceStore(t)
	farm, dev := farmDevice(t, db)
	r := furrow.Reading{FarmID: farm.ID, DeviceID: dev.ID, MetricID: 1, Value: "1"}
	if _, _, _, err := db.CreateReadingOnce(ctx, r, nil, furrow.Idempotency{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(furrow.IdempotencyWindow + time.Hour)
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: failingAttempts{db}, Retention: db, Clock: clock})
	env.ExecuteWorkflow(workflows.Retention, workflows.RetentionInput{Keep: furrow.Duration(furrow.AttemptRetention)})
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "the delivery log is unreachable") {
		t.Fatalf("Retention with a failing delivery log: %v; want its error", err)
	}
	if n, err := db.PruneIdempotencyKeys(ctx, clock.Now().Add(-furrow.IdempotencyWindow)); err != nil || n != 0 {
		t.Fatalf("expired keys left after the failed run: %d, %v; want them removed by it", n, err)
	}
}

// farmDevice makes a user's farm with one device.
func farmDevice(t *testing.T, db *pgstore.DB) (furrow.Farm, furrow.Device) {
	t.Helper()
	ctx := context.Background()
	user, _, err := db.CreateUser(ctx, "o@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := db.CreateFarm(ctx, user.ID, "farm")
	if err != nil {
		t.Fatal(err)
	}
	dev, _, err := db.CreateDevice(ctx, farm.ID, "probe")
	if err != nil {
		t.Fatal(err)
	}
	return farm, dev
}
