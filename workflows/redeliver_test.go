package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// redeliverer records the parts of redeliveries it is asked to start.
type redeliverer struct {
	mu    sync.Mutex
	parts []activities.StartRedeliveriesInput
}

func (r *redeliverer) StartRedeliveries(_ context.Context, _ furrow.Webhook, in activities.StartRedeliveriesInput) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, in)
	return len(in.Events), nil
}

// storedEvents stores n trigger.fired events of the fixture's farm, data
// included, and returns them.
func storedEvents(t *testing.T, f *fixture, n int) []furrow.Event {
	t.Helper()
	events := make([]furrow.Event, n)
	for i := range events {
		events[i] = furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: f.webhook.FarmID,
			OccurredAtMs: time.Now().UnixMilli(), Data: json.RawMessage(`{"n":1}`)}
		if _, err := f.store.CreateEvent(context.Background(), events[i]); err != nil {
			t.Fatal(err)
		}
	}
	return events
}

// A redelivery starts its deliveries a chunk at a time, each event once,
// under its batch's name and schedule, and carries no event's data.
func TestRedeliverStartsInChunks(t *testing.T) {
	f := newFixture("https://hooks.example.com/in", 0)
	events := storedEvents(t, f, 250)
	opts, in := workflows.RedeliverStart(f.webhook, events, "b1", []time.Duration{time.Second})
	if opts.ID != "redeliver/"+f.webhook.ID.String()+"/b1" || opts.TaskQueue != workflows.TaskQueue {
		t.Fatalf("start options %+v", opts)
	}
	rd := &redeliverer{}
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: f.store, Redeliverer: rd})
	env.ExecuteWorkflow(workflows.Redeliver, in)
	var res workflows.RedeliverResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Started != 250 || res.Gone {
		t.Fatalf("result %+v, %v; want 250 started", res, err)
	}
	var sizes []int
	var got []string
	for _, p := range rd.parts {
		sizes = append(sizes, len(p.Events))
		if p.Batch != "b1" || p.WebhookID != f.webhook.ID || !slices.Equal(p.Schedule, []furrow.Duration{furrow.Duration(time.Second)}) {
			t.Fatalf("part %+v", p)
		}
		for _, e := range p.Events {
			if e.Data != nil && string(e.Data) != "null" {
				t.Fatalf("event %s carried its data into the history", e.ID)
			}
			got = append(got, e.ID)
		}
	}
	want := make([]string, len(events))
	for i, e := range events {
		want[i] = e.ID
	}
	if !slices.Equal(sizes, []int{100, 100, 50}) || !slices.Equal(got, want) {
		t.Fatalf("parts of %v events, want 100, 100, 50 of every event in order", sizes)
	}
}

// A redelivery to a webhook deleted meanwhile starts nothing and ends.
func TestRedeliverToADeletedWebhook(t *testing.T) {
	f := newFixture("https://hooks.example.com/in", 0)
	_, in := workflows.RedeliverStart(f.webhook, storedEvents(t, f, 150), "b2", nil)
	f.store.remove(f.webhook)
	rd := &redeliverer{}
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: f.store, Redeliverer: rd})
	env.ExecuteWorkflow(workflows.Redeliver, in)
	var res workflows.RedeliverResult
	if err := env.GetWorkflowResult(&res); err != nil || !res.Gone || res.Started != 0 || len(rd.parts) != 0 {
		t.Fatalf("result %+v, %v, %d parts started; want gone and none", res, err, len(rd.parts))
	}
}

// On a real Temporal, asking for the redelivery of a thousand events
// returns within a request's deadline (the API's is 5 s), and the
// redelivery then starts every delivery; a part started twice, as a retried
// activity starts it, is delivered once.
func TestRedeliverAThousandEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server and a thousand deliveries")
	}
	// Ten seconds here; under the race detector the thousand deliveries
	// take minutes, and the redelivery's last part waits behind them.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := temporalServer(ctx, t)
	rc := newCountingReceiver()
	defer rc.srv.Close()
	f := newFixture(rc.srv.URL, 0)
	ctl := ftemporal.NewControl(c, nil)
	acts := &activities.Activities{Webhooks: f.store, HTTP: rc.srv.Client(), Clock: furrow.SystemClock{},
		Reporter: ftemporal.NewReporter(c), Redeliverer: ctl}
	w := ftemporal.NewWorker(c, acts, ftemporal.WorkerOptions{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	part := activities.StartRedeliveriesInput{WebhookID: f.webhook.ID, Batch: "again", Events: storedEvents(t, f, 100)}
	for range 2 {
		if n, err := ctl.StartRedeliveries(ctx, f.webhook, part); err != nil || n != len(part.Events) {
			t.Fatalf("StartRedeliveries = %d, %v; want %d", n, err, len(part.Events))
		}
	}
	rc.waitFor(t, len(part.Events))
	time.Sleep(time.Second) // time for a second delivery, had one been started
	if got, times := rc.counts(); got != len(part.Events) || times != got {
		t.Fatalf("%d events delivered %d times, want each of %d once", got, times, len(part.Events))
	}

	events := storedEvents(t, f, 1000)
	reqCtx, reqCancel := context.WithTimeout(ctx, 5*time.Second)
	n, err := ctl.Redeliver(reqCtx, f.webhook, events)
	reqCancel()
	if err != nil || n != len(events) {
		t.Fatalf("Redeliver = %d, %v; want %d", n, err, len(events))
	}
	var res workflows.RedeliverResult
	if err := c.GetWorkflow(ctx, redeliveryOf(ctx, t, c), "").Get(ctx, &res); err != nil || res.Started != len(events) || res.Gone {
		t.Fatalf("redelivery result %+v, %v; want %d started", res, err, len(events))
	}
}

// redeliveryOf returns the ID of the one Redeliver workflow, once
// visibility lists it.
func redeliveryOf(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	for {
		list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s'", workflows.RedeliverWorkflowName)})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Executions) == 1 {
			return list.Executions[0].Execution.WorkflowId
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no redelivery workflow listed: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countingReceiver answers 204 and counts the deliveries of each event.
type countingReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	received map[string]int
}

func newCountingReceiver() *countingReceiver {
	rc := &countingReceiver{received: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct{ ID string }
		if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.received[env.ID]++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return rc
}

// counts returns how many events arrived, and how many deliveries.
func (rc *countingReceiver) counts() (events, times int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, k := range rc.received {
		times += k
	}
	return len(rc.received), times
}

// waitFor waits up to 2 minutes for n events to arrive.
func (rc *countingReceiver) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for got, _ := rc.counts(); got < n; got, _ = rc.counts() {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered in 2 minutes", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sinceSet stores n trigger.fired events of the fixture's farm, with a
// metric.value event after each (which the webhook's set leaves out), and
// returns their ids, oldest first, and the set of a redelivery since the
// first of them of the trigger.fired events.
func sinceSet(t *testing.T, f *fixture, n int) ([]string, furrow.RedeliverySet) {
	t.Helper()
	ctx := context.Background()
	since := time.Now().UnixMilli()
	ids := make([]string, n)
	for i := range n {
		for _, typ := range []string{furrow.EventTriggerFired, furrow.EventMetricValue} {
			e, err := f.store.CreateEvent(ctx, furrow.Event{Type: typ, FarmID: f.webhook.FarmID, OccurredAtMs: since + int64(i/3),
				Data: json.RawMessage(`{"n":1}`)})
			if err != nil {
				t.Fatal(err)
			}
			if typ == furrow.EventTriggerFired {
				ids[i] = e.ID
			}
		}
	}
	set, err := f.store.RedeliverySet(ctx, f.webhook.FarmID, []string{furrow.EventTriggerFired}, since, furrow.MaxRedeliverSince)
	if err != nil || set.Count != n {
		t.Fatalf("set %+v, %v; want %d events", set, err, n)
	}
	return ids, set
}

// startedIDs returns the ids of the events of the parts started, in order,
// and fails on an event that carried its data.
func (r *redeliverer) startedIDs(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []string
	for _, p := range r.parts {
		for _, e := range p.Events {
			if e.Data != nil {
				t.Fatalf("event %s carried its data into the history", e.ID)
			}
			got = append(got, e.ID)
		}
	}
	return got
}

// A redelivery since a time names no event in its input: it reads its set
// a page at a time, oldest first, and starts each event once under its
// batch's name and schedule.
func TestRedeliverSinceReadsPages(t *testing.T) {
	f := newFixture("https://hooks.example.com/in", 0)
	want, set := sinceSet(t, f, 250)
	opts, in := workflows.RedeliverSinceStart(f.webhook, set, "b3", []time.Duration{time.Second})
	if opts.ID != "redeliver/"+f.webhook.ID.String()+"/b3" || len(in.Events) != 0 || in.Since == nil || in.Since.Count != 250 {
		t.Fatalf("start %+v, input %+v", opts, in)
	}
	rd := &redeliverer{}
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: f.store, Redeliverer: rd})
	env.ExecuteWorkflow(workflows.Redeliver, in)
	var res workflows.RedeliverResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Started != 250 || res.Gone {
		t.Fatalf("result %+v, %v; want 250 started", res, err)
	}
	var sizes []int
	for _, p := range rd.parts {
		sizes = append(sizes, len(p.Events))
		if p.Batch != "b3" || p.WebhookID != f.webhook.ID || !slices.Equal(p.Schedule, []furrow.Duration{furrow.Duration(time.Second)}) {
			t.Fatalf("part %+v", p)
		}
	}
	if got := rd.startedIDs(t); !slices.Equal(sizes, []int{100, 100, 50}) || !slices.Equal(got, want) {
		t.Fatalf("pages of %v events, want 100, 100, 50 of every event oldest first", sizes)
	}
}

// A redelivery of more pages than a run starts continues as new where it
// stopped, and the runs together start every event once.
func TestRedeliverSinceContinuesAsNew(t *testing.T) {
	if testing.Short() {
		t.Skip("stores twenty thousand events")
	}
	f := newFixture("https://hooks.example.com/in", 0)
	const n = 200*100 + 50 // a run's pages, and a part of one more
	want, set := sinceSet(t, f, n)
	_, in := workflows.RedeliverSinceStart(f.webhook, set, "b4", nil)
	rd := &redeliverer{}
	env := newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: f.store, Redeliverer: rd})
	env.ExecuteWorkflow(workflows.Redeliver, in)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("err = %v, want continue-as-new", err)
	}
	var next workflows.RedeliverInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Started != 200*100 || next.After == nil || next.Since == nil || next.Batch != "b4" || len(next.Events) != 0 {
		t.Fatalf("continued with %+v, want 20000 started and the place of the last", next)
	}
	env = newEnv()
	env.RegisterActivity(&activities.Activities{Webhooks: f.store, Redeliverer: rd})
	env.ExecuteWorkflow(workflows.Redeliver, next)
	var res workflows.RedeliverResult
	if err := env.GetWorkflowResult(&res); err != nil || res.Started != n {
		t.Fatalf("result %+v, %v; want %d started over both runs", res, err, n)
	}
	if got := rd.startedIDs(t); !slices.Equal(got, want) {
		t.Fatalf("%d events started, want each of the %d once, oldest first", len(got), n)
	}
}

// On a real Temporal, a redelivery since a time starts every event of its
// set once; asked again under its idempotency key, it starts nothing more.
func TestRedeliverSinceOnTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server and 250 deliveries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := temporalServer(ctx, t)
	rc := newCountingReceiver()
	defer rc.srv.Close()
	f := newFixture(rc.srv.URL, 0)
	ctl := ftemporal.NewControl(c, nil)
	w := ftemporal.NewWorker(c, &activities.Activities{Webhooks: f.store, HTTP: rc.srv.Client(), Clock: furrow.SystemClock{},
		Reporter: ftemporal.NewReporter(c), Redeliverer: ctl}, ftemporal.WorkerOptions{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ids, set := sinceSet(t, f, 250)
	for range 2 {
		if err := ctl.RedeliverSince(ctx, f.webhook, set, "recover-1"); err != nil {
			t.Fatal(err)
		}
	}
	id := workflows.RedeliverWorkflowID(f.webhook.ID, workflows.RedeliverBatch(f.webhook.ID, "recover-1"))
	var res workflows.RedeliverResult
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Started != len(ids) {
		t.Fatalf("redelivery result %+v, %v; want %d started", res, err, len(ids))
	}
	if err := ctl.RedeliverSince(ctx, f.webhook, set, "recover-1"); err != nil {
		t.Fatalf("asked again after it ended: %v", err)
	}
	rc.waitFor(t, len(ids))
	time.Sleep(time.Second) // time for a second delivery, had one been started
	if got, times := rc.counts(); got != len(ids) || times != got {
		t.Fatalf("%d events delivered %d times, want each of %d once", got, times, len(ids))
	}
}
