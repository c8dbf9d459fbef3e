package storetest

import (
	"context"
	"slices"
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
	// Lister lists a farm's webhooks as the dispatcher reads them.
	Lister DispatchLister
	// AddFarm stores ws, in order, on a new farm of their own and returns
	// the farm and the webhooks as stored.
	AddFarm func(ctx context.Context, ws ...furrow.Webhook) (uuid.UUID, []furrow.Webhook, error)
}

// DispatchLister is the listing the outbox dispatcher reads a farm's
// webhooks with (DispatchWebhooks of dispatch.Webhooks).
type DispatchLister interface {
	DispatchWebhooks(ctx context.Context, farmID uuid.UUID) ([]furrow.Webhook, error)
}

// NewDispatch returns a fresh, empty DispatchSubject.
type NewDispatch func(t *testing.T) DispatchSubject

// DispatchFromServices adapts a full implementation to DispatchStore,
// adding farms through its Users, Farms and Webhooks services; its
// Webhooks must implement DispatchLister too.
func DispatchFromServices(newSubject New) NewDispatch {
	return func(t *testing.T) DispatchSubject {
		s := newSubject(t, furrow.SystemClock{})
		lister, ok := s.Webhooks.(DispatchLister)
		if !ok {
			t.Fatalf("%T does not list webhooks for the dispatcher (DispatchWebhooks)", s.Webhooks)
		}
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
		return DispatchSubject{Webhooks: s.Webhooks, Lister: lister, AddFarm: add}
	}
}

func dispatchHook(enabled bool, types ...string) furrow.Webhook {
	return furrow.Webhook{ID: uuid.New(), URL: "https://hooks.example.com/" + uuid.NewString(),
		Secret: furrow.WebhookSecretPrefix + "c2VjcmV0", Enabled: enabled, EventTypes: types}
}

// DispatchStore checks what the outbox dispatcher relies on: a farm's
// webhooks listed in creation order with their state and subscriptions,
// none for an unknown farm, the same listed for the dispatcher with what
// it reads and no secret, and a skipped row recorded once however often
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
		"DispatchListingWithoutSecrets": func(t *testing.T, ctx context.Context, s DispatchSubject) {
			paced := dispatchHook(true, furrow.EventDeviceOffline)
			rate := 2.5
			paced.MaxPerSecond = &rate
			farm, want, err := s.AddFarm(ctx, dispatchHook(true), dispatchHook(false, furrow.EventTriggerFired), paced)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.AddFarm(ctx, dispatchHook(true)); err != nil {
				t.Fatal(err)
			}
			// A rotation with an overlap leaves a previous secret, not
			// listed either.
			if _, err := s.Webhooks.RotateWebhookSecret(ctx, farm, want[0].ID, furrow.NewWebhookSecret(), time.Hour); err != nil {
				t.Fatal(err)
			}
			got, err := s.Lister.DispatchWebhooks(ctx, farm)
			if err != nil || len(got) != len(want) {
				t.Fatalf("DispatchWebhooks = %+v, %v; want %d", got, err, len(want))
			}
			for i, w := range want {
				g := got[i]
				if g.ID != w.ID || g.FarmID != farm || g.URL != w.URL || g.Enabled != w.Enabled ||
					!slices.Equal(g.SubscribedTypes(), w.SubscribedTypes()) {
					t.Fatalf("webhook %d = %+v, want %+v", i, g, w)
				}
				if (g.MaxPerSecond == nil) != (w.MaxPerSecond == nil) || g.MaxPerSecond != nil && *g.MaxPerSecond != *w.MaxPerSecond {
					t.Fatalf("webhook %d: max_per_second %v, want %v", i, g.MaxPerSecond, w.MaxPerSecond)
				}
				if g.Secret != "" || g.PreviousSecret != "" {
					t.Fatalf("webhook %d listed for the dispatcher with a secret", i)
				}
			}
			none, err := s.Lister.DispatchWebhooks(ctx, uuid.New())
			if err != nil || len(none) != 0 {
				t.Fatalf("DispatchWebhooks(unknown farm) = %+v, %v; want none", none, err)
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
