package temporal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/temporal"
)

// starts counts WorkflowStarted calls.
type starts struct{ n atomic.Int64 }

func (s *starts) WorkflowStarted() { s.n.Add(1) }

// Control counts the delivery workflows it starts, test deliveries and
// redeliveries, and not those started already; a redelivery's own workflow
// starts no delivery itself.
func TestControlCountsTheDeliveryWorkflowsItStarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, w := redeliveryServer(ctx, t)
	var counted starts
	ctl := temporal.NewControl(c, nil).WithMetrics(&counted)
	want := func(n int64, after string) {
		t.Helper()
		if got := counted.n.Load(); got != n {
			t.Fatalf("%d delivery workflows counted after %s, want %d", got, after, n)
		}
	}
	if err := ctl.TestDelivery(ctx, w, newEvent(w)); err != nil {
		t.Fatal(err)
	}
	want(1, "a test delivery")
	in := activities.StartRedeliveriesInput{WebhookID: w.ID, Batch: "b1", Events: []furrow.Event{newEvent(w), newEvent(w)}}
	for range 2 { // the activity retried starts nothing more
		if n, err := ctl.StartRedeliveries(ctx, w, in); n != 2 || err != nil {
			t.Fatalf("StartRedeliveries = %d, %v; want 2, nil", n, err)
		}
		want(3, "the redeliveries of two events")
	}
	if err := ctl.RedeliverOnce(ctx, w, []furrow.Event{newEvent(w)}, "k"); err != nil {
		t.Fatal(err)
	}
	want(3, "a redelivery's own workflow")
	if err := temporal.NewControl(c, nil).WithMetrics(nil).TestDelivery(ctx, w, newEvent(w)); err != nil {
		t.Fatalf("a Control counting nothing: %v", err)
	}
}
