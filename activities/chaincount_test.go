package activities_test

import (
	"net/http"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow/activities"
)

// A failed chain F, ended just before a delivery's POST began, is counted
// while the POST waits for its answer: the delivery's result carries the
// count, so its chain is reported and restarts it, though the count it
// loaded before the POST was 0.
func TestDeliverReportsACountMadeDuringThePost(t *testing.T) {
	var s *store
	var fEnded int64
	s, acts, _ := setup(t, func(w http.ResponseWriter) {
		superseded, err := s.SetWebhookState(t.Context(), s.hook.ID, true, 1, fEnded)
		if err != nil || superseded {
			t.Errorf("F's count: superseded %v, err %v; want written, the delivery has no row yet", superseded, err)
		}
		w.WriteHeader(200)
	})
	fEnded = acts.Clock.Now().UnixMilli() - 300
	res, err := deliver(t, s, acts, 1)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if res.Failures != 1 {
		t.Fatalf("Failures = %d, want 1, the count written during the POST: the delivered chain would go unreported", res.Failures)
	}
}

// The other order: once the delivery's row is in, F's count is dropped.
func TestSetWebhookStateSupersededByAnEarlierRow(t *testing.T) {
	s, acts, _ := setup(t, func(w http.ResponseWriter) { w.WriteHeader(204) })
	if res, err := deliver(t, s, acts, 1); err != nil || res.Failures != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in := activities.SetWebhookStateInput{WebhookID: s.hook.ID, Enabled: true, Failures: 1,
		UnlessDeliveredAfterMs: acts.Clock.Now().UnixMilli() - 300}
	v, err := env.ExecuteActivity(acts.SetWebhookState, in)
	var got activities.SetWebhookStateResult
	if err == nil {
		err = v.Get(&got)
	}
	if err != nil || !got.Superseded {
		t.Fatalf("SetWebhookState = %+v (%v), want superseded", got, err)
	}
	if w, _ := s.WebhookByID(t.Context(), s.hook.ID); w.ConsecutiveFailures != 0 {
		t.Fatalf("webhook has %d consecutive failures, want 0", w.ConsecutiveFailures)
	}
}
