package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/furrowhq/furrow"
)

// SweepDevicesInput says which devices count as offline and how many to
// mark in one call.
type SweepDevicesInput struct {
	OfflineAfter furrow.Duration
	Batch        int
}

// SweepDevicesResult tells how many devices were marked offline; More is
// true when the batch was full, so more may be waiting. It is also the
// result of the SweepDevices workflow, which adds up its batches.
type SweepDevicesResult struct {
	Marked int
	More   bool
}

// SweepDevices marks up to in.Batch silent devices offline and stores one
// device.offline event for each; the dispatcher's sweep delivers them.
func (a *Activities) SweepDevices(ctx context.Context, in SweepDevicesInput) (SweepDevicesResult, error) {
	events, err := a.Devices.MarkOffline(ctx, time.Duration(in.OfflineAfter), in.Batch)
	if err != nil {
		return SweepDevicesResult{}, fmt.Errorf("mark devices offline: %w", err)
	}
	if len(events) > 0 {
		a.logger().InfoContext(ctx, "devices marked offline", "count", len(events))
	}
	a.metrics().DevicesOffline(len(events))
	for _, e := range events {
		a.publish(e)
	}
	return SweepDevicesResult{Marked: len(events), More: len(events) == in.Batch}, nil
}

// PruneInput says how long delivery attempts and dispatched events are kept.
type PruneInput struct {
	Keep furrow.Duration
	// KeepReadings is how long readings are kept; 0 keeps them forever.
	KeepReadings furrow.Duration
}

// PruneResult counts what was removed. It is also the result of the
// Retention workflow.
type PruneResult struct {
	Attempts int64
	Events   int64
	// Readings is about how many readings went, by whole day partitions.
	Readings int64
	// IdempotencyKeys counts the expired idempotency keys of readings
	// removed.
	IdempotencyKeys int64
}

// Prune removes delivery attempts and dispatched outbox events older than
// in.Keep, readings older than in.KeepReadings, and expired idempotency
// keys. The first three go by whole day partitions, so the cost does not
// grow with the tables; a day still holding an undispatched event is
// kept. Each step runs whatever became of the others, so one table's
// trouble never stops the rest, and a failed step fails the attempt for
// Temporal to retry.
func (a *Activities) Prune(ctx context.Context, in PruneInput) (PruneResult, error) {
	now := a.Clock.Now()
	before := now.Add(-time.Duration(in.Keep))
	var readingsBefore time.Time // zero keeps readings, and still creates the coming days' partitions
	if in.KeepReadings > 0 {
		readingsBefore = now.Add(-time.Duration(in.KeepReadings))
	}
	var r PruneResult
	steps := []struct {
		name string
		into *int64
		run  func(context.Context, time.Time) (int64, error)
		at   time.Time
	}{
		{"attempts", &r.Attempts, a.Webhooks.PruneAttempts, before},
		{"events", &r.Events, a.Retention.PruneEvents, before},
		{"readings", &r.Readings, a.Retention.PruneReadings, readingsBefore},
		{"idempotency keys", &r.IdempotencyKeys, a.Retention.PruneIdempotencyKeys, now.Add(-furrow.IdempotencyWindow)},
	}
	var errs []error
	for _, s := range steps {
		n, err := s.run(ctx, s.at)
		*s.into = n
		if err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", s.name, err))
		}
	}
	a.logger().InfoContext(ctx, "retention pruned", "attempts", r.Attempts, "events", r.Events,
		"readings", r.Readings, "idempotency_keys", r.IdempotencyKeys, "before", before)
	return r, errors.Join(errs...)
}
