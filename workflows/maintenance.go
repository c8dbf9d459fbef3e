package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow/activities"
)

// Names of the scheduled maintenance workflows and their schedules.
const (
	SweepDevicesWorkflowName = "SweepDevices"
	RetentionWorkflowName    = "Retention"
	DeviceSweepScheduleID    = "furrow-device-sweep"
	RetentionScheduleID      = "furrow-retention"
	// RetentionPeriod is how long delivery attempts and dispatched events
	// are kept.
	RetentionPeriod = 30 * 24 * time.Hour
	// RetentionEvery is how often the retention job runs.
	RetentionEvery = time.Hour
)

// sweepBatch and sweepMaxBatches bound one sweep run; a larger backlog is
// finished by the next run.
const (
	sweepBatch      = 1000
	sweepMaxBatches = 100
)

// SweepDevicesInput is the input of the device sweep.
type SweepDevicesInput struct {
	OfflineAfter time.Duration
}

// SweepDevicesResult says how many devices one sweep marked offline.
type SweepDevicesResult struct {
	Marked int
}

// SweepDevices marks devices silent for longer than OfflineAfter offline,
// one indexed query per batch, each with exactly one device.offline event
// per episode. A schedule runs it every FURROW_DEVICE_SWEEP_EVERY.
func SweepDevices(ctx workflow.Context, in SweepDevicesInput) (SweepDevicesResult, error) {
	ctx = workflow.WithActivityOptions(ctx, maintenanceOptions)
	var total SweepDevicesResult
	for i := 0; i < sweepMaxBatches; i++ {
		var r activities.SweepDevicesResult
		err := workflow.ExecuteActivity(ctx, (*activities.Activities).SweepDevices,
			activities.SweepDevicesInput{OfflineAfter: in.OfflineAfter, Batch: sweepBatch}).Get(ctx, &r)
		if err != nil {
			return total, err
		}
		total.Marked += r.Marked
		if !r.More {
			break
		}
	}
	return total, nil
}

// RetentionInput is the input of the retention job.
type RetentionInput struct {
	Keep time.Duration
	// KeepReadings is how long readings are kept; 0 keeps them forever.
	// The readings partitions of the coming days are created either way.
	KeepReadings time.Duration
}

// RetentionResult counts what one run removed.
type RetentionResult struct {
	Attempts int64
	Events   int64
	Readings int64
}

// Retention removes delivery attempts and dispatched events older than
// Keep. A schedule runs it every RetentionEvery.
func Retention(ctx workflow.Context, in RetentionInput) (RetentionResult, error) {
	ctx = workflow.WithActivityOptions(ctx, maintenanceOptions)
	var r activities.PruneResult
	err := workflow.ExecuteActivity(ctx, (*activities.Activities).Prune, activities.PruneInput{Keep: in.Keep, KeepReadings: in.KeepReadings}).Get(ctx, &r)
	return RetentionResult{Attempts: r.Attempts, Events: r.Events, Readings: r.Readings}, err
}

var maintenanceOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5},
}
