package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// ScheduleOptions configures the maintenance schedules.
type ScheduleOptions struct {
	// SweepEvery is how often devices past OfflineAfter are marked offline.
	SweepEvery   time.Duration
	OfflineAfter time.Duration
	// ReadingsRetention is how long readings are kept; 0 is forever.
	ReadingsRetention time.Duration
}

// EnsureSchedules creates the device-sweep and retention schedules, or
// updates them to the given settings when they exist, so that every worker
// may call it at start. Overlapping runs are skipped.
func EnsureSchedules(ctx context.Context, c client.Client, o ScheduleOptions) error {
	specs := []client.ScheduleOptions{
		schedule(workflows.DeviceSweepScheduleID, o.SweepEvery, workflows.SweepDevicesWorkflowName,
			workflows.SweepDevicesInput{OfflineAfter: furrow.Duration(o.OfflineAfter)}),
		schedule(workflows.RetentionScheduleID, workflows.RetentionEvery, workflows.RetentionWorkflowName,
			workflows.RetentionInput{Keep: furrow.Duration(furrow.AttemptRetention), KeepReadings: furrow.Duration(o.ReadingsRetention)}),
	}
	for _, s := range specs {
		if err := ensure(ctx, c, s); err != nil {
			return fmt.Errorf("schedule %s: %w", s.ID, err)
		}
	}
	return nil
}

func schedule(id string, every time.Duration, workflow string, arg any) client.ScheduleOptions {
	return client.ScheduleOptions{
		ID:      id,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:                       id,
			Workflow:                 workflow,
			Args:                     []any{arg},
			TaskQueue:                workflows.TaskQueue,
			WorkflowExecutionTimeout: 30 * time.Minute,
		},
	}
}

func ensure(ctx context.Context, c client.Client, s client.ScheduleOptions) error {
	_, err := c.ScheduleClient().Create(ctx, s)
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	h := c.ScheduleClient().GetHandle(ctx, s.ID)
	return h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			sch.Spec = &s.Spec
			sch.Action = s.Action
			sch.Policy = &client.SchedulePolicies{Overlap: s.Overlap}
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		},
	})
}
