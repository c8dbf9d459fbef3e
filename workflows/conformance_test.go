package workflows_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store/storetest"
)

// TestFakeConformance holds the store fake of these tests to the suite the
// PostgreSQL store passes (in package store), so the workflows are not
// tested against a store that behaves differently.
func TestFakeConformance(t *testing.T) {
	storetest.DeliveryStore(t, func(*testing.T) storetest.DeliverySubject {
		s := newStore()
		return storetest.DeliverySubject{Webhooks: s, Events: s, Seed: s.seed}
	})
}

// seed stores w and e on a farm of their own, as storetest asks.
func (s *store) seed(_ context.Context, w furrow.Webhook, e furrow.Event) (furrow.Webhook, furrow.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	farm := uuid.New()
	w.FarmID, e.FarmID = farm, farm
	s.hooks[w.ID], s.events[e.ID] = w, e
	return w, e, nil
}
