package api

import (
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store/storetest"
)

// TestFakeConformance holds the fake these tests use to the suites the
// PostgreSQL store passes, so the API is not tested against a store that
// behaves differently.
func TestFakeConformance(t *testing.T) {
	newSubject := func(_ *testing.T, clock furrow.Clock) storetest.Subject {
		f := newFakeStore(clock)
		return storetest.Subject{Users: f, Farms: f, Devices: f, Readings: f, Events: f, Webhooks: f}
	}
	storetest.APIServices(t, newSubject)
}
