package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/furrowhq/furrow/internal/testenv"
)

func TestIngestCheckWantsEachCreatedReadingStoredOnceWithItsEvent(t *testing.T) {
	good := func() IngestResult {
		return IngestResult{Phase: Phase{Status: map[string]int64{"201": 100}}, Stored: 110, Events: 110, Paired: 110,
			Warmup: &Phase{Status: map[string]int64{"201": 10}}}
	}
	if err := good().Check(); err != nil {
		t.Fatalf("a run whose every 201 is stored with its event: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(*IngestResult)
		want   string
	}{
		{"more readings stored than created", func(r *IngestResult) { r.Stored = 111 }, "110 readings created but 111 stored"},
		{"more events stored than created", func(r *IngestResult) { r.Events = 111 }, "with 111 events"},
		{"a reading without its own event", func(r *IngestResult) { r.Paired = 109 }, "109 readings with their own event"},
		{"nothing created", func(r *IngestResult) {
			r.Status = map[string]int64{"429": 100}
			r.Stored, r.Events, r.Paired = 10, 10, 10
		}, "no reading was created in the measured run (status 429=100)"},
		{"a failure in the warm-up only", func(r *IngestResult) {
			r.Warmup.Failures, r.Warmup.LastFailure = 1, "connection refused"
		}, "1 requests got no answer, last: connection refused (in the warm-up)"},
		{"requests never sent", func(r *IngestResult) { r.Unsent = 7 }, "7 scheduled requests were never sent"},
	} {
		r := good()
		c.change(&r)
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: check %v; want %q", c.name, err, c.want)
		}
	}
}

func TestDeliveryCheckWantsReadingsAcceptedAndSent(t *testing.T) {
	good := DeliveryResult{Accepted: 10, Status: map[string]int64{"201": 10}, side: side{Delivered: 10}}
	if err := good.Check(); err != nil {
		t.Fatalf("a run whose every reading was delivered: %v", err)
	}
	none := DeliveryResult{Status: map[string]int64{"429": 10}}
	if err := none.Check(); err == nil || !strings.Contains(err.Error(), "no reading was accepted") {
		t.Errorf("nothing accepted: check %v", err)
	}
	unsent := good
	unsent.Unsent = 3
	if err := unsent.Check(); err == nil || !strings.Contains(err.Error(), "3 scheduled readings were never sent") {
		t.Errorf("readings never sent: check %v", err)
	}
}

// countFarmRows pairs each reading with the event of the same device and
// value, and counts no other farm's rows.
func TestCountFarmRowsPairsEachReadingWithItsEvent(t *testing.T) {
	ctx := t.Context()
	dbURL, drop, err := ScratchDatabase(ctx, testenv.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	farm, devices, err := seedBaseline(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	other, otherDevices, err := seedBaseline(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := devices[0].String(), devices[1].String()
	for _, row := range []struct{ device, value string }{{d0, "1"}, {d0, "2"}, {d0, "3"}} {
		insertReading(t, ctx, pool, farm.String(), row.device, row.value)
	}
	// "3"'s event names another device, and "4" has no reading.
	for _, row := range []struct{ device, value string }{{d0, "1"}, {d0, "2"}, {d1, "3"}, {d0, "4"}} {
		insertEvent(t, ctx, pool, farm.String(), row.device, row.value)
	}
	insertReading(t, ctx, pool, other.String(), otherDevices[0].String(), "1")
	insertEvent(t, ctx, pool, other.String(), otherDevices[0].String(), "1")
	readings, events, paired, err := countFarmRows(ctx, dbURL, farm.String())
	if err != nil {
		t.Fatal(err)
	}
	if readings != 3 || events != 4 || paired != 2 {
		t.Errorf("%d readings, %d events, %d paired; want 3, 4 and 2", readings, events, paired)
	}
}

func insertReading(t *testing.T, ctx context.Context, pool *pgxpool.Pool, farm, device, value string) {
	t.Helper()
	_, err := pool.Exec(ctx, "INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms) VALUES ($1, $2, 220, $3, $4)",
		device, farm, value, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
}

func insertEvent(t *testing.T, ctx context.Context, pool *pgxpool.Pool, farm, device, value string) {
	t.Helper()
	data := `{"device_id":"` + device + `","metric_id":220,"value":"` + value + `","timestamp":1}`
	_, err := pool.Exec(ctx, "INSERT INTO events (id, type, farm_id, occurred_at_ms, data) VALUES (gen_random_uuid(), 'metric.value', $1, $2, $3::jsonb)",
		farm, time.Now().UnixMilli(), data)
	if err != nil {
		t.Fatal(err)
	}
}
