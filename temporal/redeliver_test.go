package temporal_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv/testtemporal"
	"github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// redeliveryServer starts the embedded Temporal server and returns a client
// of it and a webhook of its own. No worker runs: the tests look only at
// which redelivery workflows were started, and with what.
func redeliveryServer(ctx context.Context, t *testing.T) (client.Client, furrow.Webhook) {
	t.Helper()
	srv := testtemporal.New(t)
	c, err := temporal.Dial(ctx, temporal.Options{Address: srv.FrontendAddr(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, furrow.Webhook{ID: uuid.New(), FarmID: uuid.New(), URL: "https://example.com/hook", Enabled: true}
}

// newEvent is a stored event's identity, all a redelivery's input keeps.
func newEvent(w furrow.Webhook) furrow.Event {
	return furrow.Event{ID: furrow.EventID(uuid.New()), Type: furrow.EventTriggerFired, FarmID: w.FarmID, OccurredAtMs: 1000}
}

// redeliveryInput returns the input the redelivery under key to w started
// with.
func redeliveryInput(ctx context.Context, t *testing.T, c client.Client, w furrow.Webhook, key string) workflows.RedeliverInput {
	t.Helper()
	id := workflows.RedeliverWorkflowID(w.ID, workflows.RedeliverBatch(w.ID, key))
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	first, err := it.Next()
	if err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	var in workflows.RedeliverInput
	if err := converter.GetDefaultDataConverter().FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// wantOneRedelivery fails t unless exactly one redelivery workflow to w was
// started.
func wantOneRedelivery(ctx context.Context, t *testing.T, c client.Client, w furrow.Webhook) {
	t.Helper()
	wantRedeliveries(ctx, t, c, w, 1)
}

// wantRedeliveries fails t unless exactly want redelivery workflows to w
// were started. Visibility lags a start a little, so it waits for the
// want-th.
func wantRedeliveries(ctx context.Context, t *testing.T, c client.Client, w furrow.Webhook, want int64) {
	t.Helper()
	query := workflows.SearchWebhookID.GetName() + " = '" + w.ID.String() + "'"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil {
			t.Fatal(err)
		}
		if n := r.GetCount(); n > want {
			t.Fatalf("%d redelivery workflows to the webhook, want %d", n, want)
		} else if n == want {
			time.Sleep(time.Second) // time for one more to show, had it started
			if r, err = c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query}); err != nil || r.GetCount() != want {
				t.Fatalf("%d redelivery workflows to the webhook (%v), want %d", r.GetCount(), err, want)
			}
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d redelivery workflows to the webhook are visible, want %d", n, want)
		}
	}
}

// The same request sent again under its Idempotency-Key is success and
// starts nothing more.
func TestRedeliverOnceSameKeySameEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, w := redeliveryServer(ctx, t)
	ctl := temporal.NewControl(c, nil)
	e := newEvent(w)
	for i := range 2 {
		if err := ctl.RedeliverOnce(ctx, w, []furrow.Event{e}, "recover-1"); err != nil {
			t.Fatalf("request #%d: %v, want nil", i+1, err)
		}
	}
	wantOneRedelivery(ctx, t, c, w)
	set := furrow.RedeliverySet{FarmID: w.FarmID, SinceMs: 5000, Count: 3}
	for i := range 2 {
		if err := ctl.RedeliverSince(ctx, w, set, "recover-2"); err != nil {
			t.Fatalf("since request #%d: %v, want nil", i+1, err)
		}
	}
	// The since request sent twice under its key adds one redelivery to
	// the first key's, the since's.
	wantRedeliveries(ctx, t, c, w, 2)
	if in := redeliveryInput(ctx, t, c, w, "recover-2"); in.Since == nil || in.Since.SinceMs != set.SinceMs {
		t.Fatalf("the redelivery under recover-2 has input %+v, want since_ms %d", in, set.SinceMs)
	}
}

// The key reused for another event is a conflict that starts nothing: the
// one redelivery is still the first request's.
func TestRedeliverOnceSameKeyOtherEvent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, w := redeliveryServer(ctx, t)
	ctl := temporal.NewControl(c, nil)
	first, second := newEvent(w), newEvent(w)
	if err := ctl.RedeliverOnce(ctx, w, []furrow.Event{first}, "recover-1"); err != nil {
		t.Fatal(err)
	}
	wantConflict(t, ctl.RedeliverOnce(ctx, w, []furrow.Event{second}, "recover-1"), "another event under the key")
	wantOneRedelivery(ctx, t, c, w)
	wantEventRedelivered(ctx, t, c, w, "recover-1", first.ID)
}

// A key used for an event and then for a time since (or for one time since
// and then another) is a conflict too, whichever came first.
func TestRedeliverSinceSameKeyOtherBody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, w := redeliveryServer(ctx, t)
	ctl := temporal.NewControl(c, nil)
	e := newEvent(w)
	set := furrow.RedeliverySet{FarmID: w.FarmID, SinceMs: 0, Count: 1}
	if err := ctl.RedeliverSince(ctx, w, set, "recover-1"); err != nil {
		t.Fatal(err)
	}
	wantConflict(t, ctl.RedeliverOnce(ctx, w, []furrow.Event{e}, "recover-1"), "{event_id} under the key of a {since_ms}")
	later := set
	later.SinceMs = 2000
	wantConflict(t, ctl.RedeliverSince(ctx, w, later, "recover-1"), "another since_ms under the key")
	// The set fixed again later counts more events: the same since_ms is
	// the same request.
	again := set
	again.Count, again.ThroughSeq = 4, 99
	if err := ctl.RedeliverSince(ctx, w, again, "recover-1"); err != nil {
		t.Fatalf("the same since_ms again: %v, want nil", err)
	}

	if err := ctl.RedeliverOnce(ctx, w, []furrow.Event{e}, "recover-2"); err != nil {
		t.Fatal(err)
	}
	wantConflict(t, ctl.RedeliverSince(ctx, w, set, "recover-2"), "{since_ms} under the key of an {event_id}")
	if in := redeliveryInput(ctx, t, c, w, "recover-1"); in.Since == nil || in.Since.SinceMs != 0 || len(in.Events) != 0 {
		t.Fatalf("the redelivery under recover-1 has input %+v, want the first since_ms", in)
	}
	wantEventRedelivered(ctx, t, c, w, "recover-2", e.ID)
}

// A redelivery started before redeliveries recorded their request in the
// memo has none: the key sent again is answered as the same request.
func TestRedeliverUnderAKeyOfAnOldRedelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, w := redeliveryServer(ctx, t)
	opts, in := workflows.RedeliverStart(w, []furrow.Event{newEvent(w)}, workflows.RedeliverBatch(w.ID, "old"), nil)
	opts.Memo = nil
	if _, err := c.ExecuteWorkflow(ctx, opts, workflows.RedeliverWorkflowName, in); err != nil {
		t.Fatal(err)
	}
	if err := temporal.NewControl(c, nil).RedeliverOnce(ctx, w, []furrow.Event{newEvent(w)}, "old"); err != nil {
		t.Fatalf("under the key of a redelivery without a memo: %v, want nil", err)
	}
	wantOneRedelivery(ctx, t, c, w)
}

// wantConflict fails t unless err is ECONFLICT: the key reused with
// another body (what).
func wantConflict(t *testing.T, err error, what string) {
	t.Helper()
	if furrow.ErrorCode(err) != furrow.ECONFLICT {
		t.Fatalf("%s: %v, want %s", what, err, furrow.ECONFLICT)
	}
}

// wantEventRedelivered fails t unless the redelivery under key asks for
// the one event id.
func wantEventRedelivered(ctx context.Context, t *testing.T, c client.Client, w furrow.Webhook, key, id string) {
	t.Helper()
	if in := redeliveryInput(ctx, t, c, w, key); len(in.Events) != 1 || in.Events[0].ID != id || in.Since != nil {
		t.Fatalf("the redelivery under %s has input %+v, want the event %s", key, in, id)
	}
}
