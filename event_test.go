package furrow_test

import (
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

func TestEventUUIDTellsItsTime(t *testing.T) {
	at := time.Date(2031, 3, 10, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	u := furrow.NewEventUUID(at)
	if got, ok := furrow.EventUUIDTime(u); !ok || got != at || u.Version() != 7 {
		t.Fatalf("EventUUIDTime(%s) = %d, %v; want %d from a v7 uuid", u, got, ok, at)
	}
	if furrow.NewEventUUID(at) == u {
		t.Fatal("two ids of one millisecond are equal")
	}
	for _, at := range []int64{-1, 1 << 48} {
		if u := furrow.NewEventUUID(at); u.Version() != 4 {
			t.Errorf("NewEventUUID(%d) is version %d, want a random v4 uuid", at, u.Version())
		}
	}
	id, err := furrow.ParseEventID(furrow.NewEventID())
	if ms, ok := furrow.EventUUIDTime(id); err != nil || !ok || time.Since(time.UnixMilli(ms)) > time.Minute {
		t.Fatalf("NewEventID's uuid holds %d, %v (%v); want now", ms, ok, err)
	}
}
