package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// Names of the scheduled maintenance workflows and their schedules.
const (
	SweepDevicesWorkflowName = "SweepDevices"
	RetentionWorkflowName    = "Retention"
	DeviceSweepScheduleID    = "furrow-device-sweep"
	RetentionScheduleID      = "furrow-retention"
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
	OfflineAfter furrow.Duration
}

// SweepDevices marks devices silent for longer than OfflineAfter offline,
// one indexed query per batch, each with exactly one device.offline event
// per episode. A schedule runs it every FURROW_DEVICE_SWEEP_EVERY. Its
// result adds up the batches; More says the run stopped at its bound with
// devices left for the next run.
func SweepDevices(ctx workflow.Context, in SweepDevicesInput) (activities.SweepDevicesResult, error) {
	ctx = workflow.WithActivityOptions(ctx, maintenanceOptions)
	var a *activities.Activities
	var total activities.SweepDevicesResult
	for i := 0; i < sweepMaxBatches; i++ {
		var r activities.SweepDevicesResult
		err := workflow.ExecuteActivity(ctx, a.SweepDevices,
			activities.SweepDevicesInput{OfflineAfter: in.OfflineAfter, Batch: sweepBatch}).Get(ctx, &r)
		if err != nil {
			return total, err
		}
		total.Marked += r.Marked
		total.More = r.More
		if !r.More {
			break
		}
	}
	return total, nil
}

// RetentionInput is the input of the retention job.
type RetentionInput struct {
	Keep furrow.Duration
	// KeepReadings is how long readings are kept; 0 keeps them forever.
	// The readings partitions of the coming days are created either way.
	KeepReadings furrow.Duration
}

// Retention removes delivery attempts and dispatched events older than
// Keep, and returns what it removed. A schedule runs it every
// RetentionEvery.
func Retention(ctx workflow.Context, in RetentionInput) (activities.PruneResult, error) {
	ctx = workflow.WithActivityOptions(ctx, maintenanceOptions)
	var a *activities.Activities
	var r activities.PruneResult
	err := workflow.ExecuteActivity(ctx, a.Prune, activities.PruneInput{Keep: in.Keep, KeepReadings: in.KeepReadings}).Get(ctx, &r)
	return r, err
}

var maintenanceOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 5},
}
