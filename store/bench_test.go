package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
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
// store: the webhook and the event read, and the attempt row written.
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
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.WebhookByID(ctx, w.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Event(ctx, ev.ID); err != nil {
			b.Fatal(err)
		}
		a := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: w.ID, EventID: ev.ID, Attempt: 1, StatusCode: 200, AtMs: furrow.Millis(time.Now())}
		if err := db.AddAttempt(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
