package activities

import (
	"context"
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
}

// Prune removes delivery attempts and dispatched outbox events older than
// in.Keep. Both go by whole day partitions, so the cost does not grow with
// the tables; a day still holding an undispatched event is kept.
func (a *Activities) Prune(ctx context.Context, in PruneInput) (PruneResult, error) {
	before := a.Clock.Now().Add(-time.Duration(in.Keep))
	var r PruneResult
	var err error
	if r.Attempts, err = a.Webhooks.PruneAttempts(ctx, before); err != nil {
		return r, fmt.Errorf("prune attempts: %w", err)
	}
	if r.Events, err = a.Retention.PruneEvents(ctx, before); err != nil {
		return r, fmt.Errorf("prune events: %w", err)
	}
	var readingsBefore time.Time // zero keeps readings, and still creates the coming days' partitions
	if in.KeepReadings > 0 {
		readingsBefore = a.Clock.Now().Add(-time.Duration(in.KeepReadings))
	}
	if r.Readings, err = a.Retention.PruneReadings(ctx, readingsBefore); err != nil {
		return r, fmt.Errorf("prune readings: %w", err)
	}
	a.logger().InfoContext(ctx, "retention pruned", "attempts", r.Attempts, "events", r.Events, "readings", r.Readings, "before", before)
	return r, nil
}
