package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

// testFixture turns f's event into a stored webhook.test event of a
// disabled webhook that subscribes to no type of it.
func testFixture(f *fixture) {
	f.store.setEnabled(f.webhook.ID, false)
	f.event = furrow.NewWebhookTestEvent(f.webhook, f.event.OccurredAtMs)
	if err := f.store.AddTestEvent(context.Background(), f.webhook.ID, f.event); err != nil {
		panic(err)
	}
}

func TestTestDeliveryFailedChainIsNeverReported(t *testing.T) {
	srv, hits := endpoint(t, 500)
	f := newFixture(srv.URL, furrow.MaxFailedChains-1)
	testFixture(f)
	res := runDelivery(t, f, srv.Client(), []time.Duration{time.Second, time.Second})
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 3 || hits.Load() != 3 {
		t.Fatalf("result %+v after %d hits, want 3 failed attempts to the disabled webhook", res, hits.Load())
	}
	if r := f.reporter.Reports(); len(r) != 0 {
		t.Fatalf("a test delivery reported its chain: %+v", r)
	}
	rows := f.store.rows()
	if len(rows) != 3 || rows[0].EventID != f.event.ID || rows[2].StatusCode != 500 {
		t.Fatalf("attempt rows %+v", rows)
	}
}

func TestTestDeliveryDeliveredAfterFailuresIsNotReported(t *testing.T) {
	srv, hits := endpoint(t, 503, 200)
	f := newFixture(srv.URL, 2)
	testFixture(f)
	res := runDelivery(t, f, srv.Client(), []time.Duration{time.Second})
	if res.Outcome != furrow.OutcomeDelivered || hits.Load() != 2 {
		t.Fatalf("result %+v after %d hits", res, hits.Load())
	}
	if r := f.reporter.Reports(); len(r) != 0 {
		t.Fatalf("a test delivery reported its chain: %+v", r)
	}
	if w := f.store.webhook(f.webhook.ID); w.Enabled || w.ConsecutiveFailures != 2 {
		t.Fatalf("the test delivery changed the webhook: %+v", w)
	}
}
