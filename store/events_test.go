package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

func TestCreateEventAndList(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, Data: json.RawMessage(`{"rule":"dry"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := furrow.ParseEventID(e.ID); err != nil || e.OccurredAtMs != clock.Now().UnixMilli() {
		t.Fatalf("event %+v: id or time not assigned", e)
	}
	got, err := db.Event(ctx, e.ID)
	if err != nil || got.ID != e.ID || got.Type != e.Type || got.FarmID != fx.farm.ID {
		t.Fatalf("Event = %+v, %v", got, err)
	}
	var data map[string]string
	if err := json.Unmarshal(got.Data, &data); err != nil || data["rule"] != "dry" {
		t.Fatalf("data = %s", got.Data)
	}
	clock.Advance(time.Second)
	later, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventRecommendationCreated, FarmID: fx.farm.ID})
	if err != nil {
		t.Fatal(err)
	}
	es, _, err := db.Events(ctx, furrow.EventFilter{FarmID: fx.farm.ID})
	if err != nil || len(es) != 2 || es[0].ID != later.ID || es[1].ID != e.ID {
		t.Fatalf("Events = %+v, %v; want newest first", es, err)
	}
	es, _, _ = db.Events(ctx, furrow.EventFilter{FarmID: fx.farm.ID, Type: furrow.EventTriggerFired})
	if len(es) != 1 || es[0].ID != e.ID {
		t.Fatalf("type filter: %+v", es)
	}
	since := later.OccurredAtMs
	es, _, _ = db.Events(ctx, furrow.EventFilter{FarmID: fx.farm.ID, SinceMs: &since, Limit: 1})
	if len(es) != 1 || es[0].ID != later.ID {
		t.Fatalf("since filter: %+v", es)
	}

	_, err = db.Event(ctx, furrow.NewEventID())
	wantCode(t, err, furrow.ENOTFOUND)
	_, err = db.Event(ctx, "nope")
	wantCode(t, err, furrow.EINVALID)
	_, err = db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: uuid.New()})
	wantCode(t, err, furrow.ENOTFOUND)
	_, err = db.CreateEvent(ctx, e.Event)
	wantCode(t, err, furrow.ECONFLICT)
	for _, bad := range []furrow.Event{
		{Type: "unknown", FarmID: fx.farm.ID},
		{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, Data: json.RawMessage(`[1]`)},
		{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, Data: json.RawMessage(`{"a":"\u0000"}`)},
		{ID: "evt_x", Type: furrow.EventTriggerFired, FarmID: fx.farm.ID},
	} {
		_, err := db.CreateEvent(ctx, bad)
		wantCode(t, err, furrow.EINVALID)
	}
}

// subscribe gives the fixture's farm a webhook for every event type, so
// that its events wait in the outbox for the dispatcher.
func subscribe(t testing.TB, db *store.DB, fx fixture) furrow.Webhook {
	t.Helper()
	w, err := db.CreateWebhook(context.Background(), newWebhook(fx))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Events no webhook subscribes to are stored dispatched: nothing to claim.
// A disabled webhook still counts, since its events are recorded as skipped.
func TestEventsWaitOnlyForSubscribedWebhooks(t *testing.T) {
	ctx := context.Background()
	db, _ := newDB(t, newClock())
	fx := newFixture(t, db)
	check := func(what string, wantPending bool) {
		t.Helper()
		e, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID})
		if err != nil || e.Pending != wantPending {
			t.Fatalf("%s: CreateEvent pending = %v, %v; want %v", what, e.Pending, err, wantPending)
		}
		_, ev, err := db.CreateReading(ctx, furrow.Reading{FarmID: fx.farm.ID, DeviceID: fx.device.ID, MetricID: 1, Value: "1"}, nil)
		if err != nil || ev.Pending != wantPending {
			t.Fatalf("%s: CreateReading pending = %v, %v; want %v", what, ev.Pending, err, wantPending)
		}
		claimed, err := db.ClaimEvents(ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(claimed) > 0; got != wantPending {
			t.Fatalf("%s: claimed %d events; want pending = %v", what, len(claimed), wantPending)
		}
		if _, err := db.Event(ctx, e.ID); err != nil {
			t.Fatalf("%s: the event is not stored: %v", what, err)
		}
	}
	check("no webhook", false)
	if _, err := db.CreateWebhook(ctx, newWebhook(fx, furrow.EventDeviceOffline)); err != nil {
		t.Fatal(err)
	}
	check("a webhook of another type", false)
	disabled := newWebhook(fx, furrow.EventTriggerFired, furrow.EventMetricValue)
	disabled.Enabled = false
	if _, err := db.CreateWebhook(ctx, disabled); err != nil {
		t.Fatal(err)
	}
	check("a disabled webhook of these types", true)
}

func TestMarkOfflineOncePerEpisode(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	silent, _, err := db.CreateDevice(ctx, fx.farm.ID, "never-reports")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := db.CreateReading(ctx, reading(fx, 1, "1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if es, err := db.MarkOffline(ctx, time.Hour, 10); err != nil || len(es) != 0 {
		t.Fatalf("fresh device marked: %+v, %v", es, err)
	}
	clock.Advance(2 * time.Hour)
	es, err := db.MarkOffline(ctx, time.Hour, 10)
	if err != nil || len(es) != 1 {
		t.Fatalf("MarkOffline = %+v, %v; want one event", es, err)
	}
	var data furrow.DeviceOfflineData
	if err := json.Unmarshal(es[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	if es[0].Type != furrow.EventDeviceOffline || es[0].FarmID != fx.farm.ID || es[0].OccurredAtMs != clock.Now().UnixMilli() ||
		data != (furrow.DeviceOfflineData{DeviceID: fx.device.ID, LastSeenMs: r.Timestamp, OfflineAfterMs: 3600000}) {
		t.Fatalf("event %+v data %+v", es[0], data)
	}
	if _, err := db.Event(ctx, es[0].ID); err != nil {
		t.Fatalf("offline event not stored: %v", err)
	}
	d, _ := db.DeviceByID(ctx, fx.device.ID)
	if d.OfflineSinceMs == nil {
		t.Fatal("device not marked offline")
	}
	if d, _ := db.DeviceByID(ctx, silent.ID); d.OfflineSinceMs != nil {
		t.Fatal("a device that never reported was marked offline")
	}
	clock.Advance(time.Hour)
	if es, _ := db.MarkOffline(ctx, time.Hour, 10); len(es) != 0 {
		t.Fatalf("marked again in the same episode: %+v", es)
	}
	// A reading ends the episode; the next silence is announced again.
	if _, _, err := db.CreateReading(ctx, reading(fx, 1, "2"), nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := db.DeviceByID(ctx, fx.device.ID); d.OfflineSinceMs != nil {
		t.Fatal("reading did not clear the offline mark")
	}
	clock.Advance(2 * time.Hour)
	if es, _ := db.MarkOffline(ctx, time.Hour, 10); len(es) != 1 {
		t.Fatalf("second episode: %d events, want 1", len(es))
	}
}

func TestMarkOfflineHonoursLimit(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	db, _ := newDB(t, clock)
	fx := newFixture(t, db)
	for i := range 5 {
		d, _, err := db.CreateDevice(ctx, fx.farm.ID, "d")
		if err != nil {
			t.Fatal(err)
		}
		r := reading(fx, 1, "1")
		r.DeviceID = d.ID
		if _, _, err := db.CreateReading(ctx, r, nil); err != nil {
			t.Fatal(err, i)
		}
	}
	clock.Advance(3 * time.Hour)
	first, _ := db.MarkOffline(ctx, time.Hour, 3)
	rest, _ := db.MarkOffline(ctx, time.Hour, 3)
	if len(first) != 3 || len(rest) != 2 {
		t.Fatalf("sweeps marked %d then %d, want 3 then 2", len(first), len(rest))
	}
}

func TestOfflineSweepUsesPartialIndex(t *testing.T) {
	ctx := context.Background()
	_, url := newDB(t, newClock())
	conn := connect(t, url)
	// An empty table would be scanned whatever the indexes; forbid that.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := conn.Query(ctx, "EXPLAIN "+store.SweepCandidatesSQL, 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "devices_online_seen_minute") {
		t.Fatalf("sweep does not use the partial index:\n%s", plan.String())
	}
}

// TestEventDataAsPostgreSQLStoresIt: what furrow.CheckEventData refuses,
// PostgreSQL's jsonb refuses too or writes out many times longer, and is
// EINVALID rather than a failed statement; what it accepts is stored and
// read back no more than a few times its size.
func TestEventDataAsPostgreSQLStoresIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rendered := func(data string) (int, error) {
		var n int
		err := conn.QueryRow(ctx, "SELECT octet_length($1::text::jsonb::text)", data).Scan(&n)
		return n, err
	}
	for _, data := range []string{`{"a":"\u0000"}`, `{"a":"\ud800"}`, `{"a":"\udc00x"}`, `{"a":1e400}`, `{"a":[1e-400]}`,
		`{"a":0.` + strings.Repeat("0", 16383) + `1}`, `{"a":1e-16384,"pad":"` + strings.Repeat("x", 17000) + `"}`} {
		n, pgErr := rendered(data)
		if pgErr == nil && n < 10*len(data) {
			t.Errorf("PostgreSQL stores %s as %d bytes: the case does not show what it should", data, n)
		}
		_, err := db.CreateEvent(ctx, furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, Data: json.RawMessage(data)})
		wantCode(t, err, furrow.EINVALID)
	}
	for _, data := range []string{`{"a":"C:\\u0000","b":"\ud83d\ude00"}`, `{"a":1.5e3,"b":1E-3,"c":[1,2,3]}`,
		`{"a":0.` + strings.Repeat("0", 16382) + `1}`} {
		e, err := db.CreateEvent(ctx, furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: fx.farm.ID, Data: json.RawMessage(data)})
		if err != nil {
			t.Fatalf("CreateEvent(%s): %v", data, err)
		}
		got, err := db.Event(ctx, e.ID)
		if err != nil || len(got.Data) > 3*len(data) {
			t.Errorf("Event(%s) = %s, %v; want it stored", data, got.Data, err)
		}
	}
}
