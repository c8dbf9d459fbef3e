package furrow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
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

// An event id is evt_ and the 36-character hyphenated uuid, its hex in
// either case: one pattern, which the API document states. uuid.Parse
// alone also takes braces, a URN and bare hex.
func TestParseEventIDForms(t *testing.T) {
	u := uuid.MustParse("0190f4a2-7b3c-7d4e-8f90-a1b2c3d4e5f6")
	for _, id := range []string{"evt_" + u.String(), "evt_" + strings.ToUpper(u.String())} {
		if got, err := furrow.ParseEventID(id); err != nil || got != u || furrow.EventID(got) != "evt_"+u.String() {
			t.Errorf("ParseEventID(%q) = %v, %v; want %v", id, got, err, u)
		}
	}
	for _, id := range []string{
		"evt_{" + u.String() + "}",
		"evt_urn:uuid:" + u.String(),
		"evt_" + strings.ReplaceAll(u.String(), "-", ""),
		"evt_" + u.String() + "0",
		"evt_" + u.String()[:35],
		"evt_" + strings.Replace(u.String(), "-", "_", 1),
		"EVT_" + u.String(),
		u.String(),
		"evt_",
		"",
	} {
		if _, err := furrow.ParseEventID(id); furrow.ErrorCode(err) != furrow.EINVALID {
			t.Errorf("ParseEventID(%q): %v, want EINVALID", id, err)
		}
	}
}

// ParseUUID takes the 36-character hyphenated form only, in either case.
func TestParseUUIDForms(t *testing.T) {
	const s = "0190f4a2-7b3c-7d4e-8f90-a1b2c3d4e5f6"
	for _, in := range []string{s, strings.ToUpper(s)} {
		if u, err := furrow.ParseUUID(in); err != nil || u.String() != s {
			t.Errorf("ParseUUID(%q) = %v, %v", in, u, err)
		}
	}
	for _, in := range []string{"{" + s + "}", "urn:uuid:" + s, strings.ReplaceAll(s, "-", ""), "", s[:35] + "g"} {
		if _, err := furrow.ParseUUID(in); furrow.ErrorCode(err) != furrow.EINVALID {
			t.Errorf("ParseUUID(%q): %v, want EINVALID", in, err)
		}
	}
}
