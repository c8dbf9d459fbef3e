package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// MinScheduleInterval is the shortest interval a Temporal schedule takes;
// the server refuses a shorter one ("interval is too small").
const MinScheduleInterval = time.Second

// ScheduleOptions configures the maintenance schedules.
type ScheduleOptions struct {
	// SweepEvery is how often devices past OfflineAfter are marked
	// offline; at least MinScheduleInterval.
	SweepEvery   time.Duration
	OfflineAfter time.Duration
	// ReadingsRetention is how long readings are kept; 0 is forever.
	ReadingsRetention time.Duration
}

// ScheduleChange is a schedule whose settings EnsureSchedules changed:
// every worker sets them at start, so two workers configured differently
// take turns, and the caller should say so.
type ScheduleChange struct {
	ID string
	// From and To are the interval and the input, as "every 1h0m0s, {...}".
	From, To string
}

// EnsureSchedules creates the device-sweep and retention schedules, or
// updates them to the given settings when they exist, so that every worker
// may call it at start. Overlapping runs are skipped. It returns the
// existing schedules whose settings it changed; one already as asked is
// left alone.
func EnsureSchedules(ctx context.Context, c client.Client, o ScheduleOptions) ([]ScheduleChange, error) {
	specs := []client.ScheduleOptions{
		schedule(workflows.DeviceSweepScheduleID, o.SweepEvery, workflows.SweepDevicesWorkflowName,
			workflows.SweepDevicesInput{OfflineAfter: furrow.Duration(o.OfflineAfter)}),
		schedule(workflows.RetentionScheduleID, workflows.RetentionEvery, workflows.RetentionWorkflowName,
			workflows.RetentionInput{Keep: furrow.Duration(furrow.AttemptRetention), KeepReadings: furrow.Duration(o.ReadingsRetention)}),
	}
	var changes []ScheduleChange
	for _, s := range specs {
		change, err := ensure(ctx, c, s)
		if err != nil {
			return changes, fmt.Errorf("schedule %s: %w", s.ID, err)
		}
		if change != nil {
			changes = append(changes, *change)
		}
	}
	return changes, nil
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

// ensure creates s, or updates the schedule of its ID to it and returns
// what changed; a schedule already as s asks is not touched.
func ensure(ctx context.Context, c client.Client, s client.ScheduleOptions) (*ScheduleChange, error) {
	_, err := c.ScheduleClient().Create(ctx, s)
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil, err
	}
	want, err := settings(s.Spec, s.Action)
	if err != nil {
		return nil, err
	}
	var change *ScheduleChange
	h := c.ScheduleClient().GetHandle(ctx, s.ID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			var spec client.ScheduleSpec
			if sch.Spec != nil {
				spec = *sch.Spec
			}
			have, err := settings(spec, sch.Action)
			if err == nil && have == want && sch.Policy != nil && sch.Policy.Overlap == s.Overlap {
				return nil, temporal.ErrSkipScheduleUpdate
			}
			change = &ScheduleChange{ID: s.ID, From: have, To: want}
			sch.Spec = &s.Spec
			sch.Action = s.Action
			sch.Policy = &client.SchedulePolicies{Overlap: s.Overlap}
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return change, nil
}

// settings describes a schedule's interval, workflow, timeout and input,
// as given to Create (the input a value) or as described (a payload).
func settings(spec client.ScheduleSpec, action client.ScheduleAction) (string, error) {
	a, ok := action.(*client.ScheduleWorkflowAction)
	if !ok || len(a.Args) != 1 {
		return "", fmt.Errorf("not a workflow action of one argument: %T", action)
	}
	arg, ok := a.Args[0].(*commonpb.Payload)
	if !ok {
		var err error
		if arg, err = converter.GetDefaultDataConverter().ToPayload(a.Args[0]); err != nil {
			return "", err
		}
	}
	var every []time.Duration
	for _, iv := range spec.Intervals {
		every = append(every, iv.Every)
	}
	return fmt.Sprintf("every %v, %v on %s within %v, %s", every, a.Workflow, a.TaskQueue, a.WorkflowExecutionTimeout, arg.GetData()), nil
}
