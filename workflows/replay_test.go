package workflows_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

var update = flag.Bool("update", false, "regenerate testdata histories against an in-process Temporal")

// Histories replayed by TestReplay, kept as they were recorded: the
// unprefixed ones before the delivery workflow's attempt-per-activity
// change, those prefixed "attempt_per_activity_" after it and before its
// outcome-search-attributes change, those prefixed
// "outcome_search_attributes_" after it and before two changes made side by
// side: the webhook workflow's lifecycle events ("lifecycle_events_",
// recorded without the webhook rate) and the webhook rate
// ("webhook_rate_", with both, asking for each change's version), then
// those of deliveries started at Revision 1, which ask for none, recorded
// before the webhook workflow's chain-order change ("before_chain_order_"),
// the webhook workflow's before its gone-check change
// ("before_gone_check_") and before its chain-streaks change
// ("before_chain_streaks_"), then the current ones, and a redelivery's
// workflow of named events and one of a redelivery since a time. go test
// -run TestReplay -update records the current ones (prefix); their
// redelivery first waits for the webhook's rate.
var histories = []string{
	"delivery_rejected.json", "delivery_retried.json", "webhook.json",
	"attempt_per_activity_delivery_rejected.json", "attempt_per_activity_delivery_retried.json", "attempt_per_activity_webhook.json",
	"outcome_search_attributes_delivery_rejected.json", "outcome_search_attributes_delivery_retried.json", "outcome_search_attributes_webhook.json",
	"lifecycle_events_delivery_rejected.json", "lifecycle_events_delivery_retried.json", "lifecycle_events_webhook.json",
	"webhook_rate_delivery_rejected.json", "webhook_rate_delivery_retried.json", "webhook_rate_webhook.json",
	"before_chain_order_delivery_rejected.json", "before_chain_order_delivery_retried.json", "before_chain_order_webhook.json",
	"before_gone_check_webhook.json", "before_chain_streaks_webhook.json",
	prefix + "delivery_rejected.json", prefix + "delivery_retried.json", prefix + "webhook.json",
	prefix + "redeliver.json", prefix + "redeliver_since.json",
}

// prefix names the histories recorded by the current code.
const prefix = "revision_"

// TestReplay replays recorded histories so that a non-deterministic change
// of a workflow fails here before it fails running workflows.
func TestReplay(t *testing.T) {
	if *update {
		record(t)
	}
	r := worker.NewWorkflowReplayer()
	ftemporal.RegisterWorkflows(r)
	for _, name := range histories {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// record runs a rejected delivery (reported as a failed chain, which fails
// its workflow and, the webhook having failed chains before, disables it),
// re-enables the webhook through the API's signal, runs a delivery that
// succeeds on its second attempt, and writes the histories of both
// deliveries and of the webhook workflow they signal.
func record(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := temporalServer(ctx, t)
	statuses := []int{400, 500, 200}
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(statuses[min(hits, len(statuses)-1)])
		hits++
	}))
	defer srv.Close()
	f := newFixture(srv.URL, furrow.MaxFailedChains-1)
	acts := &activities.Activities{Webhooks: f.store, HTTP: srv.Client(), Clock: furrow.SystemClock{},
		Reporter: ftemporal.NewReporter(c), Pacer: &pacer{waits: []time.Duration{0, time.Second}},
		Redeliverer: ftemporal.NewControl(c, nil)}
	w := ftemporal.NewWorker(c, acts, ftemporal.WorkerOptions{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	run(ctx, t, c, workflows.DeliveryWorkflowID(f.webhook.ID, f.event.ID), f, prefix+"delivery_rejected.json")
	waitFor(t, func() bool { return len(f.store.Writes()) == 1 })
	if err := ftemporal.NewControl(c, nil).Reenable(ctx, f.webhook.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(f.store.Writes()) == 2 })
	rate := 1.0
	if _, err := f.store.UpdateWebhook(ctx, f.webhook.FarmID, f.webhook.ID, furrow.WebhookPatch{SetMaxPerSecond: true, MaxPerSecond: &rate}); err != nil {
		t.Fatal(err)
	}
	f.webhook = f.store.webhook(f.webhook.ID)
	run(ctx, t, c, workflows.RedeliveryWorkflowID(f.webhook.ID, f.event.ID, "1"), f, prefix+"delivery_retried.json")
	if n := len(f.store.lifecycleEvents(f.webhook.FarmID)); n != 2 {
		t.Fatalf("%d lifecycle events recorded, want webhook.disabled and webhook.enabled", n)
	}
	export(ctx, t, c, workflows.WebhookWorkflowID(f.webhook.ID), prefix+"webhook.json")
	recordRedeliver(ctx, t, c, f)
}

// recordRedeliver runs the redelivery of the fixture's event and writes
// its history.
func recordRedeliver(ctx context.Context, t *testing.T, c client.Client, f *fixture) {
	if _, err := ftemporal.NewControl(c, nil).Redeliver(ctx, f.webhook, []furrow.Event{f.event}); err != nil {
		t.Fatal(err)
	}
	id := redeliveryOf(ctx, t, c)
	var res workflows.RedeliverResult
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Started != 1 {
		t.Fatalf("redelivery result %+v, %v; want 1 started", res, err)
	}
	export(ctx, t, c, id, prefix+"redeliver.json")
	recordRedeliverSince(ctx, t, c, f)
}

// recordRedeliverSince runs the redelivery since a time of the fixture's
// event and writes its history.
func recordRedeliverSince(ctx context.Context, t *testing.T, c client.Client, f *fixture) {
	set, err := f.store.RedeliverySet(ctx, f.webhook.FarmID, f.webhook.SubscribedTypes(), f.event.OccurredAtMs, furrow.MaxRedeliverSince)
	if err != nil || set.Count != 1 {
		t.Fatalf("set %+v, %v; want the fixture's event", set, err)
	}
	if err := ftemporal.NewControl(c, nil).RedeliverSince(ctx, f.webhook, set, "record"); err != nil {
		t.Fatal(err)
	}
	id := workflows.RedeliverWorkflowID(f.webhook.ID, workflows.RedeliverBatch(f.webhook.ID, "record"))
	var res workflows.RedeliverResult
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Started != 1 {
		t.Fatalf("redelivery since result %+v, %v; want 1 started", res, err)
	}
	export(ctx, t, c, id, prefix+"redeliver_since.json")
}

// temporalServer starts an in-process Temporal server for the test, with
// Furrow's search attributes registered, and returns its client.
func temporalServer(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		SearchAttributes: workflows.SearchAttributes(), Namespace: ts.GetDefaultNamespace()}); err != nil {
		t.Fatal(err)
	}
	return c
}

func run(ctx context.Context, t *testing.T, c client.Client, id string, f *fixture, file string) {
	opts, in := workflows.DeliveryStart(id, f.webhook, f.event, []time.Duration{time.Second})
	wr, err := c.ExecuteWorkflow(ctx, opts, workflows.DeliveryWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.DeliveryResult
	err = wr.Get(ctx, &res)
	var chainFailed *temporal.ApplicationError
	if errors.As(err, &chainFailed) && chainFailed.Type() == workflows.ErrorTypeChainFailed {
		err = chainFailed.Details(&res)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", id, res)
	export(ctx, t, c, id, file)
}

func export(ctx context.Context, t *testing.T, c client.Client, id, file string) {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", file), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRevisionAsksNoVersion: the deliveries recorded at Revision 1 hold no
// version marker and never set TemporalChangeVersion, while those recorded
// before revisions do: each is two events more in every delivery's history.
func TestRevisionAsksNoVersion(t *testing.T) {
	for file, want := range map[string]bool{
		prefix + "delivery_rejected.json":     false,
		prefix + "delivery_retried.json":      false,
		"webhook_rate_delivery_rejected.json": true,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var h historypb.History
		if err := protojson.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		markers, upserts := 0, 0
		for _, e := range h.Events {
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "Version" {
				markers++
			}
			if _, ok := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()["TemporalChangeVersion"]; ok {
				upserts++
			}
		}
		if (markers > 0) != want || (upserts > 0) != want {
			t.Errorf("%s: %d version markers and %d TemporalChangeVersion upserts; want some: %v", file, markers, upserts, want)
		}
	}
}
