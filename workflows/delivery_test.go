package workflows_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/memstore"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// runDelivery runs the delivery workflow of f's event against handler, with
// time skipping, and returns its result.
func runDelivery(t *testing.T, f *fixture, client *http.Client, schedule []time.Duration) workflows.DeliveryResult {
	t.Helper()
	env := newEnv()
	acts := &activities.Activities{Webhooks: f.store, HTTP: client,
		Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter}
	ftemporal.Register(env, acts)
	_, in := workflows.DeliveryStart("id", f.webhook, f.event, schedule)
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	res := deliveryResult(t, env)
	if res.Outcome == furrow.OutcomeFailed && env.GetWorkflowError() == nil {
		t.Fatalf("a failed chain completed its workflow: %+v", res)
	}
	return res
}

// deliveryResult is the result of a delivery workflow that ended: its
// result when it completed, or the details of the error that failed it
// when its chain failed, which must be a non-retryable error of type
// ErrorTypeChainFailed.
func deliveryResult(t *testing.T, env *testsuite.TestWorkflowEnvironment) workflows.DeliveryResult {
	t.Helper()
	var res workflows.DeliveryResult
	err := env.GetWorkflowError()
	if err == nil {
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrorTypeChainFailed || !appErr.NonRetryable() {
		t.Fatalf("workflow failed with %v, want a non-retryable %s", err, workflows.ErrorTypeChainFailed)
	}
	if err := appErr.Details(&res); err != nil || res.Outcome != furrow.OutcomeFailed {
		t.Fatalf("failure details %+v (%v), want a failed chain's result", res, err)
	}
	return res
}

// endpoint answers the statuses in turn, repeating the last one.
func endpoint(t *testing.T, statuses ...int) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(hits.Add(1))
		w.WriteHeader(statuses[min(n, len(statuses))-1])
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestDeliveryFullScheduleAgainstFailingEndpoint(t *testing.T) {
	srv, hits := endpoint(t, 500)
	f := newFixture(srv.URL, 0)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || hits.Load() != 8 {
		t.Fatalf("got %+v after %d hits, want failed after 8 attempts", res, hits.Load())
	}
	rows := f.store.rows()
	if len(rows) != 8 {
		t.Fatalf("got %d attempt rows, want 8", len(rows))
	}
	for i, d := range furrow.DefaultSchedule() {
		if rows[i].Attempt != i+1 {
			t.Errorf("row %d has attempt %d", i, rows[i].Attempt)
		}
		if gap := time.Duration(rows[i+1].AtMs-rows[i].AtMs) * time.Millisecond; gap != d {
			t.Errorf("delay after attempt %d = %s, want %s", i+1, gap, d)
		}
	}
	if rows[7].Attempt != 8 {
		t.Errorf("last row has attempt %d, want 8", rows[7].Attempt)
	}
	assertReports(t, f, true, 500)
}

func TestDeliveryNotRetried(t *testing.T) {
	for _, status := range []int{400, 404, 302, 301} {
		srv, hits := endpoint(t, status)
		f := newFixture(srv.URL, 0)
		res := runDelivery(t, f, srv.Client(), nil)
		if res.Outcome != furrow.OutcomeFailed || res.Attempts != 1 || hits.Load() != 1 {
			t.Errorf("status %d: got %+v after %d hits, want failed after 1 attempt", status, res, hits.Load())
		}
		assertReports(t, f, true, status)
	}
}

func TestDeliveryRetriedThenDelivered(t *testing.T) {
	for _, status := range []int{408, 429, 500, 502, 503} {
		srv, hits := endpoint(t, status, status, 204)
		f := newFixture(srv.URL, 0)
		res := runDelivery(t, f, srv.Client(), nil)
		if res.Outcome != furrow.OutcomeDelivered || res.Attempts != 3 || res.StatusCode != 204 || hits.Load() != 3 {
			t.Errorf("status %d: got %+v after %d hits, want delivered on attempt 3", status, res, hits.Load())
		}
		// A healthy webhook's workflow is never bothered.
		if n := len(f.reporter.Reports()); n != 0 {
			t.Errorf("status %d: %d reports, want none", status, n)
		}
	}
}

func TestDeliverySuccessAfterFailuresIsReported(t *testing.T) {
	srv, _ := endpoint(t, 200)
	f := newFixture(srv.URL, 2)
	if res := runDelivery(t, f, srv.Client(), nil); res.Outcome != furrow.OutcomeDelivered || res.Attempts != 1 {
		t.Fatalf("got %+v, want delivered at once", res)
	}
	assertReports(t, f, false, 200)
}

func TestDeliveryTimeoutAndConnectionFailureRetried(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer hang.Close()
	defer close(release)
	f := newFixture(hang.URL, 0)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	res := runDelivery(t, f, client, []time.Duration{time.Minute})
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 2 {
		t.Fatalf("timeout: got %+v, want failed after 2 attempts", res)
	}
	if rows := f.store.rows(); rows[0].Error != "timeout after 10s" || rows[0].StatusCode != 0 {
		t.Errorf("timeout row = %+v", rows[0])
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	f = newFixture(closed.URL, 0)
	res = runDelivery(t, f, http.DefaultClient, []time.Duration{time.Minute, time.Hour})
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 3 {
		t.Fatalf("connection failure: got %+v, want failed after 3 attempts", res)
	}
	if rows := f.store.rows(); len(rows) != 3 || rows[2].Error == "" {
		t.Errorf("connection failure rows = %+v", rows)
	}
}

func TestDeliverySkippedWhenDisabledMidChain(t *testing.T) {
	var f *fixture
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 2 {
			f.store.setEnabled(f.webhook.ID, false)
		}
		w.WriteHeader(503)
	}))
	defer srv.Close()
	f = newFixture(srv.URL, 0)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeSkipped || res.Attempts != 3 || hits.Load() != 2 {
		t.Fatalf("got %+v after %d hits, want skipped at attempt 3", res, hits.Load())
	}
	rows := f.store.rows()
	if len(rows) != 3 || rows[2].Error != "skipped: webhook disabled" || rows[2].Attempt != 3 {
		t.Fatalf("rows = %+v", rows)
	}
	if n := len(f.reporter.Reports()); n != 0 {
		t.Errorf("a skipped chain was reported %d times", n)
	}
}

func TestDeliverySkippedWhenDeleted(t *testing.T) {
	srv, hits := endpoint(t, 200)
	f := newFixture(srv.URL, 0)
	f.store.remove(f.webhook)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeSkipped || hits.Load() != 0 {
		t.Fatalf("got %+v after %d hits, want skipped without a request", res, hits.Load())
	}
	if rows := f.store.rows(); len(rows) != 1 || rows[0].Error != "skipped: webhook deleted" {
		t.Fatalf("rows = %+v", rows)
	}
}

// assertReports checks that the chain was reported once, with the status
// code of its last attempt and, when failed, that attempt's error, naming
// its workflow's run and when it ended.
func assertReports(t *testing.T, f *fixture, failed bool, status int) {
	t.Helper()
	reports := f.reporter.Reports()
	want := furrow.ChainReport{WebhookID: f.webhook.ID, EventID: f.event.ID, Failed: failed, StatusCode: status,
		Chain: "default-test-workflow-id/default-test-run-id"}
	if failed {
		want.Error = fmt.Sprintf("endpoint answered %d", status)
	}
	if len(reports) != 1 || reports[0].EndedAtMs < f.event.OccurredAtMs {
		t.Fatalf("reports = %+v, want one of a chain that ended after its event occurred", reports)
	}
	got := reports[0]
	if got.EndedAtMs = 0; got != want {
		t.Errorf("reports = %+v, want [%+v]", reports, want)
	}
}

// A chain whose attempts could not be made, its webhook unreadable (a
// database down, a key ring without the secret's key), follows the
// schedule and ends failed, but is not reported: it does not count toward
// disabling a webhook that was never tried.
func TestDeliveryUnsentChainIsNotCounted(t *testing.T) {
	srv, hits := endpoint(t, 200)
	f := newFixture(srv.URL, furrow.MaxFailedChains-1)
	f.store.Fault(func(c memstore.Call) error {
		if c.Method == "AttemptParts" {
			return errors.New("store: webhook w: its secret is sealed with key \"k2\" and no key ring is configured")
		}
		return nil
	})
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || hits.Load() != 0 || !strings.Contains(res.Error, "could not load") {
		t.Fatalf("got %+v after %d hits, want failed after 8 attempts that sent nothing", res, hits.Load())
	}
	if reports := f.reporter.Reports(); len(reports) != 0 {
		t.Fatalf("reports = %+v, want none", reports)
	}
}
