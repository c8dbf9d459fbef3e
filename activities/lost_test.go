package activities_test

import (
	"net/http"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// A lost attempt's row is written once however often the call is retried:
// its delivery id derives from the run and the attempt.
func TestRecordLostAttemptWritesOnce(t *testing.T) {
	s, acts, _ := setup(t, func(w http.ResponseWriter) { w.WriteHeader(200) })
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in := activities.LostAttemptInput{WebhookID: s.hook.ID, EventID: s.event.ID, Attempt: 2, AtMs: 1714564800500}
	for i, want := range []bool{true, false} {
		v, err := env.ExecuteActivity(acts.RecordLostAttempt, in)
		var res activities.LostAttemptResult
		if err == nil {
			err = v.Get(&res)
		}
		if err != nil || res.Written != want {
			t.Fatalf("call %d: written %v, err %v; want written %v", i+1, res.Written, err, want)
		}
	}
	rows := s.attempts()
	if len(rows) != 1 || rows[0].Error != furrow.AttemptLost || rows[0].Attempt != 2 || rows[0].StatusCode != 0 || rows[0].AtMs != in.AtMs {
		t.Fatalf("rows = %+v, want one lost attempt 2", rows)
	}
}
