package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// DeliverySubject is the part of the store the delivery engine's
// activities use (AttemptParts, WebhookByID, SetWebhookState, AddTestEvent
// and AddAttempt of Webhooks), the Events they are checked against, and a
// way to put a webhook and an event in it.
type DeliverySubject struct {
	Webhooks furrow.WebhookService
	Events   furrow.EventService
	// Seed stores w on a farm of its own and e on the same farm, and
	// returns both as stored (w.FarmID and e.FarmID set to that farm).
	Seed func(ctx context.Context, w furrow.Webhook, e furrow.Event) (furrow.Webhook, furrow.Event, error)
}

// NewDelivery returns a fresh, empty DeliverySubject.
type NewDelivery func(t *testing.T) DeliverySubject

// DeliveryFromServices adapts a full implementation to DeliveryStore,
// seeding through its Users, Farms, Webhooks and Events services.
func DeliveryFromServices(newSubject New) NewDelivery {
	return func(t *testing.T) DeliverySubject {
		s := newSubject(t, furrow.SystemClock{})
		seed := func(ctx context.Context, w furrow.Webhook, e furrow.Event) (furrow.Webhook, furrow.Event, error) {
			owner, _, err := s.Users.CreateUser(ctx, uuid.NewString()+"@example.com")
			if err != nil {
				return w, e, err
			}
			farm, err := s.Farms.CreateFarm(ctx, owner.ID, "Delivery farm")
			if err != nil {
				return w, e, err
			}
			w.FarmID, e.FarmID = farm.ID, farm.ID
			if w, err = s.Webhooks.CreateWebhook(ctx, w); err != nil {
				return w, e, err
			}
			if w.ConsecutiveFailures != 0 || !w.Enabled {
				_, err = s.Webhooks.SetWebhookState(ctx, w.ID, w.Enabled, w.ConsecutiveFailures, 0)
			}
			if err == nil {
				_, err = s.Events.CreateEvent(ctx, e)
			}
			return w, e, err
		}
		return DeliverySubject{Webhooks: s.Webhooks, Events: s.Events, Seed: seed}
	}
}

// DeliveryStore checks what the delivery engine's activities rely on: a
// webhook and an event read back as stored, ENOTFOUND for what is not
// there, state writes that the next read sees, and attempt rows accepted
// whatever their outcome, even for a webhook deleted meanwhile.
func DeliveryStore(t *testing.T, newSubject NewDelivery) {
	cases := map[string]func(*testing.T, context.Context, DeliverySubject, furrow.Webhook, furrow.Event){
		"ReadBackAsStored": func(t *testing.T, ctx context.Context, s DeliverySubject, w furrow.Webhook, e furrow.Event) {
			got, err := s.Webhooks.WebhookByID(ctx, w.ID)
			if err != nil || got.URL != w.URL || got.Secret != w.Secret || got.FarmID != w.FarmID ||
				!got.Enabled || got.ConsecutiveFailures != 2 {
				t.Fatalf("WebhookByID = %+v (%v), want %+v", got, err, w)
			}
			ev, err := s.Events.Event(ctx, e.ID)
			if err != nil || ev.ID != e.ID || ev.Type != e.Type || ev.FarmID != e.FarmID || ev.OccurredAtMs != e.OccurredAtMs {
				t.Fatalf("Event = %+v (%v), want %+v", ev, err, e)
			}
			var a, b any
			if json.Unmarshal(ev.Data, &a) != nil || json.Unmarshal(e.Data, &b) != nil || !jsonEqual(a, b) {
				t.Fatalf("event data %s, want %s", ev.Data, e.Data)
			}
			p, err := s.Webhooks.AttemptParts(ctx, w.ID, e.ID, false)
			if err != nil || !p.WebhookFound || !p.EventFound || !sameWebhook(p.Webhook, got) ||
				p.Event.ID != ev.ID || p.Event.Type != ev.Type || p.Event.OccurredAtMs != ev.OccurredAtMs ||
				!sameJSON(p.Event.Data, ev.Data) {
				t.Fatalf("AttemptParts = %+v (%v), want %+v and %+v", p, err, got, ev)
			}
		},
		"AttemptPartsSayWhatIsThere": func(t *testing.T, ctx context.Context, s DeliverySubject, w furrow.Webhook, e furrow.Event) {
			test := furrow.NewWebhookTestEvent(w, furrow.Millis(Start))
			if err := s.Webhooks.AddTestEvent(ctx, w.ID, test); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				what      string
				webhook   uuid.UUID
				event     string
				test      bool
				hook, ev  bool
				eventID   string
				eventFarm uuid.UUID
			}{
				{"both", w.ID, e.ID, false, true, true, e.ID, w.FarmID},
				{"the test event", w.ID, test.ID, true, true, true, test.ID, w.FarmID},
				{"a farm event as a test event", w.ID, e.ID, true, true, false, "", uuid.Nil},
				{"a test event as a farm event", w.ID, test.ID, false, true, false, "", uuid.Nil},
				{"no event", w.ID, furrow.NewEventID(), false, true, false, "", uuid.Nil},
				{"no webhook", uuid.New(), e.ID, false, false, true, e.ID, w.FarmID},
				{"neither", uuid.New(), furrow.NewEventID(), false, false, false, "", uuid.Nil},
			} {
				p, err := s.Webhooks.AttemptParts(ctx, c.webhook, c.event, c.test)
				if err != nil || p.WebhookFound != c.hook || p.EventFound != c.ev ||
					p.Event.ID != c.eventID || p.Event.FarmID != c.eventFarm ||
					(c.hook && p.Webhook.ID != w.ID) || (!c.hook && p.Webhook.ID != uuid.Nil) {
					t.Fatalf("%s: AttemptParts = %+v (%v), want webhook %v, event %v", c.what, p, err, c.hook, c.ev)
				}
			}
			if _, err := s.Webhooks.AttemptParts(ctx, w.ID, "evt_nope", false); furrow.ErrorCode(err) != furrow.EINVALID {
				t.Fatalf("AttemptParts(malformed event id): %v, want EINVALID", err)
			}
		},
		"UnknownIsNotFound": func(t *testing.T, ctx context.Context, s DeliverySubject, _ furrow.Webhook, _ furrow.Event) {
			if _, err := s.Webhooks.WebhookByID(ctx, uuid.New()); furrow.ErrorCode(err) != furrow.ENOTFOUND {
				t.Fatalf("WebhookByID(unknown): %v, want ENOTFOUND", err)
			}
			if _, err := s.Events.Event(ctx, furrow.NewEventID()); furrow.ErrorCode(err) != furrow.ENOTFOUND {
				t.Fatalf("Event(unknown): %v, want ENOTFOUND", err)
			}
			if _, err := s.Webhooks.SetWebhookState(ctx, uuid.New(), true, 0, 0); furrow.ErrorCode(err) != furrow.ENOTFOUND {
				t.Fatalf("SetWebhookState(unknown): %v, want ENOTFOUND", err)
			}
		},
		"SetStateThenRead": func(t *testing.T, ctx context.Context, s DeliverySubject, w furrow.Webhook, _ furrow.Event) {
			for _, st := range []struct {
				enabled  bool
				failures int
			}{{false, furrow.MaxFailedChains}, {true, 0}, {true, 3}} {
				if _, err := s.Webhooks.SetWebhookState(ctx, w.ID, st.enabled, st.failures, 0); err != nil {
					t.Fatal(err)
				}
				got, err := s.Webhooks.WebhookByID(ctx, w.ID)
				if err != nil || got.Enabled != st.enabled || got.ConsecutiveFailures != st.failures || got.URL != w.URL {
					t.Fatalf("after SetWebhookState(%v, %d): %+v (%v)", st.enabled, st.failures, got, err)
				}
			}
		},
		"AttemptsOfEveryOutcome": func(t *testing.T, ctx context.Context, s DeliverySubject, w furrow.Webhook, e furrow.Event) {
			at := furrow.Millis(Start)
			rows := []furrow.Attempt{
				{StatusCode: 503, ResponseBody: "busy", DurationMs: 12},
				{Error: "timeout after 10s", DurationMs: 10_000},
				{StatusCode: 200, ResponseBody: "\x00not text\xff"},
				{Error: "skipped: webhook disabled"},
			}
			for i, a := range rows {
				a.DeliveryID, a.WebhookID, a.EventID, a.Attempt, a.AtMs = uuid.New(), w.ID, e.ID, i+1, at
				if err := s.Webhooks.AddAttempt(ctx, a); err != nil {
					t.Fatalf("AddAttempt(%+v): %v", a, err)
				}
			}
			gone := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: uuid.New(), EventID: e.ID, Attempt: 1,
				Error: "skipped: webhook deleted", AtMs: at}
			if err := s.Webhooks.AddAttempt(ctx, gone); err != nil {
				t.Fatalf("AddAttempt for a deleted webhook: %v", err)
			}
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := newSubject(t)
			w := furrow.Webhook{ID: uuid.New(), URL: "https://hooks.example.com/in?x=1",
				Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: true, ConsecutiveFailures: 2}
			e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired,
				OccurredAtMs: furrow.Millis(Start), Data: json.RawMessage(`{"trigger_id":"t1","value":"1.5"}`)}
			w, e, err := s.Seed(ctx, w, e)
			if err != nil {
				t.Fatalf("seed: %v", err)
			}
			fn(t, ctx, s, w, e)
		})
	}
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
