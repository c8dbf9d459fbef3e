package store_test

import (
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store/storetest"
)

// TestConformance holds the PostgreSQL store to the suites that the fakes
// of other packages' tests are held to.
func TestConformance(t *testing.T) {
	newSubject := func(t *testing.T, clock furrow.Clock) storetest.Subject {
		db, _ := newDB(t, clock)
		return storetest.Subject{Users: db, Farms: db, Devices: db, Readings: db, Events: db, Webhooks: db, Outbox: db}
	}
	t.Run("UserService", func(t *testing.T) { storetest.UserService(t, newSubject) })
	t.Run("FarmService", func(t *testing.T) { storetest.FarmService(t, newSubject) })
	t.Run("DeviceService", func(t *testing.T) { storetest.DeviceService(t, newSubject) })
	t.Run("ReadingService", func(t *testing.T) { storetest.ReadingService(t, newSubject) })
	t.Run("EventService", func(t *testing.T) { storetest.EventService(t, newSubject) })
	t.Run("WebhookService", func(t *testing.T) { storetest.WebhookService(t, newSubject) })
	t.Run("Outbox", func(t *testing.T) { storetest.Outbox(t, newSubject) })
	t.Run("DeliveryStore", func(t *testing.T) { storetest.DeliveryStore(t, storetest.DeliveryFromServices(newSubject)) })
	t.Run("DispatchStore", func(t *testing.T) { storetest.DispatchStore(t, storetest.DispatchFromServices(newSubject)) })
}
