package memstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/internal/testclock"
)

// The Store is every service its consumers depend on.
var (
	_ furrow.UserService    = (*memstore.Store)(nil)
	_ furrow.FarmService    = (*memstore.Store)(nil)
	_ furrow.DeviceService  = (*memstore.Store)(nil)
	_ furrow.ReadingService = (*memstore.Store)(nil)
	_ furrow.EventService   = (*memstore.Store)(nil)
	_ furrow.WebhookService = (*memstore.Store)(nil)
	_ furrow.Outbox         = (*memstore.Store)(nil)
)

// farm returns a store with a farm of a new owner.
func farm(t *testing.T, clock furrow.Clock) (*memstore.Store, furrow.Farm) {
	t.Helper()
	s := memstore.New(clock)
	u, _, err := s.CreateUser(t.Context(), "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.CreateFarm(t.Context(), u.ID, "North")
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

func TestFaultFailsOnlyTheChosenMethods(t *testing.T) {
	s, f := farm(t, furrow.SystemClock{})
	down := errors.New("connection refused")
	s.Fault(memstore.Fail(down, "Webhooks", "ClaimEvents"))
	if _, err := s.Webhooks(t.Context(), f.ID); !errors.Is(err, down) {
		t.Fatalf("Webhooks: %v, want the fault", err)
	}
	if _, err := s.CreateWebhook(t.Context(), furrow.Webhook{FarmID: f.ID}); err != nil {
		t.Fatalf("CreateWebhook failed too: %v", err)
	}
	s.Fault(nil)
	if ws, err := s.Webhooks(t.Context(), f.ID); err != nil || len(ws) != 1 {
		t.Fatalf("after the fault: %v, %v", ws, err)
	}
}

func TestFaultSeesArgumentsAndMayPanic(t *testing.T) {
	s, f := farm(t, furrow.SystemClock{})
	s.Fault(func(c memstore.Call) error {
		if c.Method == "CreateDevice" && c.Args[1] == "boom" {
			panic("driver exploded")
		}
		return nil
	})
	if _, _, err := s.CreateDevice(t.Context(), f.ID, "fine"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("the hook's panic did not reach the caller")
		}
		if _, _, err := s.Devices(t.Context(), furrow.DeviceFilter{FarmID: f.ID}); err != nil {
			t.Fatalf("the store stayed locked after the panic: %v", err)
		}
	}()
	_, _, _ = s.CreateDevice(t.Context(), f.ID, "boom")
}

func TestFailRejectsUnknownMethods(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a misspelt method was accepted")
		}
	}()
	memstore.Fail(errors.New("x"), "ClaimEvent")
}

func TestRecorderSeesCallsResultsAndDeadlines(t *testing.T) {
	s, f := farm(t, furrow.SystemClock{})
	rec := s.Record()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ev := furrow.NewEventID()
	a := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: uuid.New(), EventID: ev, AtMs: 5}
	if err := s.AddAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.AddAttempt(context.Background(), a); furrow.ErrorCode(err) != furrow.ECONFLICT {
		t.Fatalf("the same row again: %v", err)
	}
	if _, _, err := s.CreateDevice(ctx, f.ID, "probe"); err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls("AddAttempt")
	if len(calls) != 2 || !calls[0].Deadline || calls[1].Deadline || calls[0].Err != nil || calls[1].Err == nil {
		t.Fatalf("AddAttempt calls = %+v", calls)
	}
	if got := rec.Attempts(); len(got) != 1 || !reflect.DeepEqual(got[0], a) {
		t.Fatalf("Attempts = %+v, want the one stored", got)
	}
	last, ok := rec.Last("CreateDevice")
	if d, isDevice := last.Result.(furrow.Device); !ok || !isDevice || d.Name != "probe" || last.Args[0] != f.ID {
		t.Fatalf("last CreateDevice = %+v", last)
	}
	if n := rec.Count(); n != 3 {
		t.Fatalf("%d calls recorded, want 3", n)
	}
}

func TestEndedContextFailsTheCall(t *testing.T) {
	s, f := farm(t, furrow.SystemClock{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.CreateWebhook(ctx, furrow.Webhook{FarmID: f.ID}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateWebhook on an ended context: %v", err)
	}
	if ws, _ := s.Webhooks(t.Context(), f.ID); len(ws) != 0 {
		t.Fatal("the call was carried out anyway")
	}
}

func TestOutboxState(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	s, f := farm(t, clock)
	if _, err := s.CreateWebhook(t.Context(), furrow.Webhook{FarmID: f.ID, EventTypes: []string{furrow.EventTriggerFired}}); err != nil {
		t.Fatal(err)
	}
	wait, _ := s.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventTriggerFired, FarmID: f.ID})
	unwanted, _ := s.CreateEvent(t.Context(), furrow.Event{Type: furrow.EventDeviceOffline, FarmID: f.ID})
	if st, ok := s.OutboxState(unwanted.ID); !ok || !st.Dispatched {
		t.Fatalf("an event no webhook wants: %+v, want dispatched at once", st)
	}
	owner := uuid.New()
	if _, err := s.ClaimEvents(t.Context(), furrow.Claim{Owner: owner, Limit: 10, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.OutboxState(wait.ID); st.Dispatched || st.LeaseOwner != owner {
		t.Fatalf("claimed: %+v", st)
	}
	clock.Advance(time.Minute)
	if st, _ := s.OutboxState(wait.ID); st.LeaseOwner != uuid.Nil {
		t.Fatalf("expired lease still held: %+v", st)
	}
	if _, ok := s.OutboxState(furrow.NewEventID()); ok {
		t.Fatal("an unknown event has a state")
	}
}

func TestMarkOfflineOncePerSilence(t *testing.T) {
	clock := testclock.New(time.UnixMilli(1_700_000_000_000))
	s, f := farm(t, clock)
	ctx := t.Context()
	d, _, _ := s.CreateDevice(ctx, f.ID, "probe")
	r := furrow.Reading{FarmID: f.ID, DeviceID: d.ID, MetricID: 1, Value: "1"}
	if _, _, err := s.CreateReading(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateDevice(ctx, f.ID, "never reported"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	es, err := s.MarkOffline(ctx, time.Hour, 10)
	if err != nil || len(es) != 1 || es[0].Type != furrow.EventDeviceOffline || es[0].FarmID != f.ID {
		t.Fatalf("MarkOffline = %+v, %v; want the silent device's event", es, err)
	}
	if again, _ := s.MarkOffline(ctx, time.Hour, 10); len(again) != 0 {
		t.Fatalf("announced twice: %+v", again)
	}
	if got, _ := s.DeviceByID(ctx, d.ID); got.OfflineSinceMs == nil {
		t.Fatal("the device is not marked")
	}
	if _, _, err := s.CreateReading(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.DeviceByID(ctx, d.ID); got.OfflineSinceMs != nil {
		t.Fatal("a reading did not clear the mark")
	}
}

func TestPruneAttemptsByWholeDays(t *testing.T) {
	s := memstore.New(furrow.SystemClock{})
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{day.Add(-time.Hour), day.Add(time.Hour), day.Add(30 * time.Hour)} {
		if err := s.AddAttempt(t.Context(), furrow.Attempt{EventID: furrow.NewEventID(), AtMs: furrow.Millis(at)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PruneAttempts(t.Context(), day.Add(12*time.Hour)); err != nil || n != 1 {
		t.Fatalf("PruneAttempts = %d, %v; want the day before only", n, err)
	}
}
