package store_test

import (
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/store/storetest"
)

// TestConformance holds the PostgreSQL store to the suites that the
// in-memory store of other packages' tests (internal/memstore) is held to.
func TestConformance(t *testing.T) {
	newSubject := func(t *testing.T, clock furrow.Clock) storetest.Subject {
		db, _ := newDB(t, clock)
		return storetest.Subject{Users: db, Farms: db, Devices: db, Readings: db, Events: db, Webhooks: db, Outbox: db}
	}
	storetest.APIServices(t, newSubject)
	t.Run("Outbox", func(t *testing.T) { storetest.Outbox(t, newSubject) })
	t.Run("DeliveryStore", func(t *testing.T) { storetest.DeliveryStore(t, storetest.DeliveryFromServices(newSubject)) })
	t.Run("DispatchStore", func(t *testing.T) { storetest.DispatchStore(t, storetest.DispatchFromServices(newSubject)) })
}

// TestConformanceSealed: sealing secrets at rest changes nothing the
// services' callers see.
func TestConformanceSealed(t *testing.T) {
	newSubject := func(t *testing.T, clock furrow.Clock) storetest.Subject {
		db, _ := newDB(t, clock, func(o *store.Options) { o.Keys = ringOf(t, "k1", 1) })
		return storetest.Subject{Users: db, Farms: db, Devices: db, Readings: db, Events: db, Webhooks: db, Outbox: db}
	}
	t.Run("WebhookService", func(t *testing.T) { storetest.WebhookService(t, newSubject) })
	t.Run("SecretRotation", func(t *testing.T) { storetest.SecretRotation(t, newSubject) })
	t.Run("DeliveryStore", func(t *testing.T) { storetest.DeliveryStore(t, storetest.DeliveryFromServices(newSubject)) })
}
