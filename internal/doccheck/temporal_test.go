package doccheck

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/memstore"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// temporalRunbook is the operators' page on Temporal.
const temporalRunbook = "docs/operating/temporal.md"

// noReports takes the chain reports the delivery workflow sends.
type noReports struct{}

func (noReports) ReportChain(context.Context, furrow.ChainReport) error { return nil }

// failedChainMessage runs a delivery workflow, on the default schedule,
// against url and returns the message of the error that failed it.
func failedChainMessage(t *testing.T, url string, client *http.Client) string {
	t.Helper()
	ctx := context.Background()
	s := memstore.New(furrow.SystemClock{})
	owner, _, err := s.CreateUser(ctx, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := s.CreateFarm(ctx, owner.ID, "North")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.CreateWebhook(ctx, furrow.Webhook{ID: uuid.New(), FarmID: farm.ID, URL: url, Secret: "whsec_doc", Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	e := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventTriggerFired, FarmID: farm.ID,
		OccurredAtMs: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC).UnixMilli(), Data: []byte(`{"x":1}`)}
	if _, err := s.CreateEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(quiet))
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	ftemporal.Register(env, &activities.Activities{Webhooks: s, HTTP: client, Clock: furrow.ClockFunc(env.Now), Reporter: noReports{}, Logger: quiet})
	_, in := workflows.DeliveryStart("doc", w, e, furrow.DefaultSchedule())
	env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
	var appErr *temporal.ApplicationError
	if !env.IsWorkflowCompleted() || !errors.As(env.GetWorkflowError(), &appErr) || appErr.Type() != workflows.ErrorTypeChainFailed {
		t.Fatalf("the delivery to %s did not fail its workflow: %v", url, env.GetWorkflowError())
	}
	return appErr.Message()
}

// answering returns a receiver that answers every delivery status.
func answering(t *testing.T, status int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	return srv
}

var (
	// failedErrorExamples is the runbook's list of a failed delivery
	// workflow's errors.
	failedErrorExamples = regexp.MustCompile(`the error says the last attempt's answer \(([^()]*(?:\([^()]*\)[^()]*)*)\)`)
	whitespace          = regexp.MustCompile(`\s+`)
)

// The errors the runbook gives as examples of a failed delivery workflow's
// are the ones the delivery workflow fails with: a chain retried to its
// end, an answer that is not retried, and a receiver that never answers
// (the cause of the connection failure elided as "…").
func TestTemporalRunbookFailedChainErrors(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	unavailable, notFound := answering(t, http.StatusServiceUnavailable), answering(t, http.StatusNotFound)
	var want []string
	for _, m := range []string{
		failedChainMessage(t, unavailable.URL, unavailable.Client()),
		failedChainMessage(t, notFound.URL, notFound.Client()),
		failedChainMessage(t, closed.URL, http.DefaultClient),
	} {
		if head, _, cut := strings.Cut(m, "(connection failed: "); cut {
			m = head + "(connection failed: …)"
		}
		want = append(want, m)
	}
	page := whitespace.ReplaceAllString(string(read(t, temporalRunbook)), " ")
	list := failedErrorExamples.FindStringSubmatch(page)
	if list == nil {
		t.Fatalf("%s has no list of a failed workflow's errors (%q)", temporalRunbook, failedErrorExamples)
	}
	var got []string
	for _, span := range codeSpan.FindAllString(list[1], -1) {
		got = append(got, strings.Trim(span, "`"))
	}
	for _, m := range want {
		if !slices.Contains(got, m) {
			t.Errorf("%s does not give %q among a failed workflow's errors %q", temporalRunbook, m, got)
		}
	}
	for _, m := range got {
		if !slices.Contains(want, m) {
			t.Errorf("%s gives %q as a failed workflow's error, which the delivery workflow does not fail with (it does with %q)", temporalRunbook, m, want)
		}
	}
}
