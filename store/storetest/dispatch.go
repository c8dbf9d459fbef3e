package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// DispatchSubject is what the outbox dispatcher reads and writes besides
// the Outbox: a farm's webhooks (Webhooks of WebhookService), and the rows
// of events it records as skipped (AddAttempt).
type DispatchSubject struct {
	Webhooks furrow.WebhookService
	// AddFarm stores ws, in order, on a new farm of their own and returns
	// the farm and the webhooks as stored.
	AddFarm func(ctx context.Context, ws ...furrow.Webhook) (uuid.UUID, []furrow.Webhook, error)
}

// NewDispatch returns a fresh, empty DispatchSubject.
type NewDispatch func(t *testing.T) DispatchSubject

// DispatchFromServices adapts a full implementation to DispatchStore,
// adding farms through its Users, Farms and Webhooks services.
func DispatchFromServices(newSubject New) NewDispatch {
	return func(t *testing.T) DispatchSubject {
		s := newSubject(t, furrow.SystemClock{})
		add := func(ctx context.Context, ws ...furrow.Webhook) (uuid.UUID, []furrow.Webhook, error) {
			owner, _, err := s.Users.CreateUser(ctx, uuid.NewString()+"@example.com")
			if err != nil {
				return uuid.Nil, nil, err
			}
			farm, err := s.Farms.CreateFarm(ctx, owner.ID, "Dispatch farm")
			if err != nil {
				return uuid.Nil, nil, err
			}
			var out []furrow.Webhook
			for _, w := range ws {
				w.FarmID = farm.ID
				if w, err = s.Webhooks.CreateWebhook(ctx, w); err != nil {
					return uuid.Nil, nil, err
				}
				out = append(out, w)
			}
			return farm.ID, out, nil
		}
		return DispatchSubject{Webhooks: s.Webhooks, AddFarm: add}
	}
}

func dispatchHook(enabled bool, types ...string) furrow.Webhook {
	return furrow.Webhook{ID: uuid.New(), URL: "https://hooks.example.com/" + uuid.NewString(),
		Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: enabled, EventTypes: types}
}

// DispatchStore checks what the outbox dispatcher relies on: a farm's
// webhooks listed in creation order with their state and subscriptions,
// none for an unknown farm, and a skipped row recorded once however often
// the same event is dispatched.
func DispatchStore(t *testing.T, newSubject NewDispatch) {
	cases := map[string]func(*testing.T, context.Context, DispatchSubject){
		"FarmWebhooksInCreationOrder": func(t *testing.T, ctx context.Context, s DispatchSubject) {
			farm, want, err := s.AddFarm(ctx, dispatchHook(true), dispatchHook(false, furrow.EventTriggerFired),
				dispatchHook(true, furrow.EventDeviceOffline))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.AddFarm(ctx, dispatchHook(true)); err != nil {
				t.Fatal(err)
			}
			got, err := s.Webhooks.Webhooks(ctx, farm)
			if err != nil || len(got) != len(want) {
				t.Fatalf("Webhooks = %+v, %v; want %d", got, err, len(want))
			}
			for i, w := range want {
				g := got[i]
				if g.ID != w.ID || g.FarmID != farm || g.Enabled != w.Enabled {
					t.Fatalf("webhook %d = %+v, want %+v", i, g, w)
				}
				for _, typ := range furrow.EventTypes {
					if g.Subscribes(typ) != w.Subscribes(typ) {
						t.Fatalf("webhook %d subscribes to %s: %v, want %v", i, typ, g.Subscribes(typ), w.Subscribes(typ))
					}
				}
			}
			none, err := s.Webhooks.Webhooks(ctx, uuid.New())
			if err != nil || len(none) != 0 {
				t.Fatalf("Webhooks(unknown farm) = %+v, %v; want none", none, err)
			}
		},
		"SkippedRecordedOnce": func(t *testing.T, ctx context.Context, s DispatchSubject) {
			_, ws, err := s.AddFarm(ctx, dispatchHook(false))
			if err != nil {
				t.Fatal(err)
			}
			a := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: ws[0].ID, EventID: furrow.NewEventID(),
				Error: "skipped: webhook disabled", AtMs: furrow.Millis(Start)}
			if err := s.Webhooks.AddAttempt(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := s.Webhooks.AddAttempt(ctx, a); furrow.ErrorCode(err) != furrow.ECONFLICT {
				t.Fatalf("the same skipped row again: %v, want %s", err, furrow.ECONFLICT)
			}
			a.DeliveryID = uuid.New()
			if err := s.Webhooks.AddAttempt(ctx, a); err != nil {
				t.Fatalf("another delivery's row: %v", err)
			}
		},
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fn(t, ctx, newSubject(t))
		})
	}
}
