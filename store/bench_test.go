package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/store"
)

// BenchmarkCreateReading measures group-committed readings from many
// concurrent callers spread over 64 devices, for several writer counts.
func BenchmarkCreateReading(b *testing.B) {
	for _, writers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchmarkCreateReading(b, writers)
		})
	}
}

func benchmarkCreateReading(b *testing.B, writers int) {
	ctx := context.Background()
	db, _ := newDB(b, furrow.SystemClock{}, func(o *store.Options) { o.Writers = writers })
	fx := newFixture(b, db)
	devices := []fixture{fx}
	for range 63 {
		d, _, err := db.CreateDevice(ctx, fx.farm.ID, "bench")
		if err != nil {
			b.Fatal(err)
		}
		devices = append(devices, fixture{farm: fx.farm, device: d})
	}
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, _, err := db.CreateReading(ctx, reading(devices[i%len(devices)], 220, "21.5"), nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAttemptStoreWork measures what a delivery attempt asks of the
// store: the webhook and the event read, in one batch as attempts read
// them or apart, and the attempt row written.
func BenchmarkAttemptStoreWork(b *testing.B) {
	ctx := context.Background()
	db, _ := newDB(b, furrow.SystemClock{})
	fx := newFixture(b, db)
	w, err := db.CreateWebhook(ctx, newWebhook(fx))
	if err != nil {
		b.Fatal(err)
	}
	_, ev, err := db.CreateReading(ctx, reading(fx, 220, "21.5"), nil)
	if err != nil {
		b.Fatal(err)
	}
	work := []struct {
		name string
		do   func() error
	}{
		{"reads=batched", func() error {
			p, err := db.AttemptParts(ctx, w.ID, ev.ID, false)
			if err == nil && (!p.WebhookFound || !p.EventFound) {
				err = fmt.Errorf("AttemptParts = %+v", p)
			}
			return err
		}},
		{"reads=apart", func() error {
			if _, err := db.WebhookByID(ctx, w.ID); err != nil {
				return err
			}
			_, err := db.Event(ctx, ev.ID)
			return err
		}},
		{"row", func() error {
			return db.AddAttempt(ctx, furrow.Attempt{DeliveryID: uuid.New(), WebhookID: w.ID, EventID: ev.ID,
				Attempt: 1, StatusCode: 200, AtMs: furrow.Millis(time.Now())})
		}},
	}
	for _, wk := range work {
		b.Run(wk.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := wk.do(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClaimPastDispatched measures a claim that finds nothing after
// two busy hours whose events were all dispatched, on a database that has
// not vacuumed since: each event left a dead entry in the partial index of
// undispatched events.
func BenchmarkClaimPastDispatched(b *testing.B) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2031, 3, 10, 12, 0, 0, 0, time.UTC))
	db, url := newDB(b, clock)
	fx := newFixture(b, db)
	subscribe(b, db, fx)
	if _, err := db.CreateEvent(ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: fx.farm.ID}); err != nil {
		b.Fatal(err) // makes the day's partition
	}
	const perSecond, hours = 100, 2
	now := furrow.Millis(clock.Now())
	conn := connect(b, url)
	_, err := conn.Exec(ctx, `INSERT INTO events (id, type, farm_id, occurred_at_ms, data)
		SELECT gen_random_uuid(), 'trigger.fired', $1, $2 + i * 1000 / $3, '{}'
		FROM generate_series(1, $4::bigint) i`, fx.farm.ID, now-hours*3600_000, perSecond, perSecond*hours*3600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE events SET dispatched_at_ms = $1 WHERE dispatched_at_ms IS NULL", now); err != nil {
		b.Fatal(err)
	}
	if _, err := store.RaiseOutboxFloor(ctx, db); err != nil {
		b.Fatal(err)
	}
	claim := furrow.Claim{Owner: uuid.New(), Limit: 100, Lease: 5 * time.Second}
	for b.Loop() {
		if got, err := db.ClaimEvents(ctx, claim); err != nil || len(got) != 0 {
			b.Fatalf("ClaimEvents = %d events, %v", len(got), err)
		}
	}
}
