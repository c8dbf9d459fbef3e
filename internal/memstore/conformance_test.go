package memstore_test

import (
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/store/storetest"
)

// TestConformance holds the in-memory store to the suites the PostgreSQL
// store passes (in package store), exactly as that store is run.
func TestConformance(t *testing.T) {
	newSubject := func(_ *testing.T, clock furrow.Clock) storetest.Subject {
		s := memstore.New(clock)
		return storetest.Subject{Users: s, Farms: s, Devices: s, Readings: s, Events: s, Webhooks: s, Outbox: s}
	}
	storetest.APIServices(t, newSubject)
	t.Run("Outbox", func(t *testing.T) { storetest.Outbox(t, newSubject) })
	t.Run("DeliveryStore", func(t *testing.T) { storetest.DeliveryStore(t, storetest.DeliveryFromServices(newSubject)) })
	t.Run("DispatchStore", func(t *testing.T) { storetest.DispatchStore(t, storetest.DispatchFromServices(newSubject)) })
}
