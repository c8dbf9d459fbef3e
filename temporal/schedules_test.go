package temporal_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv/testtemporal"

	"github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// A worker that starts with the schedules' settings leaves them alone; one
// with other settings changes them and is told what changed, so that two
// workers configured differently are seen taking turns.
func TestEnsureSchedulesReportsOnlyChanges(t *testing.T) {
	ctx, tc := dialTestTemporal(t)
	first := temporal.ScheduleOptions{SweepEvery: time.Minute, OfflineAfter: 2 * time.Hour}
	for i, want := range []int{0, 0} { // made, then already as asked
		if changes, err := temporal.EnsureSchedules(ctx, tc, first); err != nil || len(changes) != want {
			t.Fatalf("EnsureSchedules #%d = %+v, %v; want %d changes", i+1, changes, err, want)
		}
	}
	other := first
	other.ReadingsRetention = 24 * time.Hour
	changes, err := temporal.EnsureSchedules(ctx, tc, other)
	if err != nil || len(changes) != 1 || changes[0].ID != workflows.RetentionScheduleID {
		t.Fatalf("EnsureSchedules with another readings retention = %+v, %v; want the retention schedule changed", changes, err)
	}
	if c := changes[0]; c.From == c.To || !strings.Contains(c.To, `"KeepReadings":"24h"`) {
		t.Fatalf("change %+v does not show the new retention", c)
	}
	if changes, err := temporal.EnsureSchedules(ctx, tc, other); err != nil || len(changes) != 0 {
		t.Fatalf("EnsureSchedules again = %+v, %v; want none", changes, err)
	}
}

// SPEC: the delivery log keeps every attempt for 30 days. The retention
// schedule runs Retention with Keep, furrow.AttemptRetention (the one
// definition), which must be those 30 days.
func TestRetentionScheduleKeepsAttempts30Days(t *testing.T) {
	ctx, tc := dialTestTemporal(t)
	if _, err := temporal.EnsureSchedules(ctx, tc, temporal.ScheduleOptions{SweepEvery: time.Minute, OfflineAfter: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	d, err := tc.ScheduleClient().GetHandle(ctx, workflows.RetentionScheduleID).Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || a.Workflow != workflows.RetentionWorkflowName || len(a.Args) != 1 {
		t.Fatalf("the retention schedule's action %+v, want %s with one input", d.Schedule.Action, workflows.RetentionWorkflowName)
	}
	p, ok := a.Args[0].(*commonpb.Payload)
	if !ok {
		t.Fatalf("the retention schedule's input is a %T, want a payload", a.Args[0])
	}
	var in workflows.RetentionInput
	if err := converter.GetDefaultDataConverter().FromPayload(p, &in); err != nil {
		t.Fatal(err)
	}
	keep := time.Duration(in.Keep)
	if keep != furrow.AttemptRetention {
		t.Errorf("the retention schedule keeps attempts %v, not furrow.AttemptRetention (%v)", keep, furrow.AttemptRetention)
	}
	if keep != 30*24*time.Hour {
		t.Errorf("the retention schedule keeps attempts %v, want SPEC's 30 days", keep)
	}
}

// dialTestTemporal starts an in-process Temporal and dials it, for 2
// minutes at most; both end with the test.
func dialTestTemporal(t *testing.T) (context.Context, client.Client) {
	t.Helper()
	srv := testtemporal.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tc, err := temporal.Dial(ctx, temporal.Options{Address: srv.FrontendAddr(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return ctx, tc
}
