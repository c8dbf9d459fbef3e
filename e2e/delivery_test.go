package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/internal/testenv"
)

// devEnv is `furrow dev` with its embedded Temporal on free ports and a
// one-second retry schedule, trusting a local HTTPS receiver.
type devEnv struct {
	f        *furrow
	db       string
	temporal string
	rc       *receiver
	fx       fixture
}

func newDevEnv(t *testing.T, extra ...string) *devEnv {
	t.Helper()
	db := newDatabase(t)
	rc := newReceiver(t)
	temporalAddr := freeAddr(t)
	env := map[string]string{
		"FURROW_DATABASE_URL":          db,
		"FURROW_DEV_TEMPORAL_ADDR":     temporalAddr,
		"FURROW_DEV_UI_ADDR":           freeAddr(t),
		"FURROW_DEV_DATA_DIR":          t.TempDir(),
		"FURROW_RETRY_SCHEDULE":        "1s,1s,1s,1s,1s,1s,1s",
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "true",
		"FURROW_WEBHOOK_CA_FILE":       rc.CAFile,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	f := start(t, "dev", env)
	return &devEnv{f: f, db: db, temporal: temporalAddr, rc: rc, fx: newFixture(t, f, db)}
}

// webhookState is the management API's view of a webhook.
type webhookState struct {
	ID                  string
	URL                 string
	Secret              string
	Enabled             bool
	ConsecutiveFailures int `json:"consecutive_failures"`
}

func (e *devEnv) createWebhook(t *testing.T, body map[string]any) webhookState {
	t.Helper()
	r := do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks", body, bearer(e.fx.Token)...)
	expect(t, r, 201, "")
	var w webhookState
	r.JSON(t, &w)
	if !strings.HasPrefix(w.Secret, "whsec_") || !w.Enabled {
		t.Fatalf("new webhook %s", r.Body)
	}
	return w
}

func (e *devEnv) webhook(t *testing.T, id string) webhookState {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+id, nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var w webhookState
	r.JSON(t, &w)
	return w
}

// postReading stores a reading and returns its timestamp.
func (e *devEnv) postReading(t *testing.T, value any) string {
	t.Helper()
	r := do(t, nil, "POST", e.f.URL+"/api/metric-values", reading(e.fx.DeviceID, value), bearer(e.fx.Key)...)
	expect(t, r, 201, "")
	var got struct{ Timestamp string }
	r.JSON(t, &got)
	return got.Timestamp
}

type attemptRow struct {
	DeliveryID string `json:"delivery_id"`
	EventID    string `json:"event_id"`
	Attempt    int
	StatusCode int `json:"status_code"`
	Error      string
}

func (e *devEnv) attempts(t *testing.T, webhookID string) []attemptRow {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+webhookID+"/attempts?limit=100", nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var rows []attemptRow
	r.JSON(t, &rows)
	return rows
}

func TestDeliveryEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	e := newDevEnv(t)
	rc := e.rc
	if out := e.f.Stdout(); !strings.Contains(out, "curl") || !strings.Contains(out, "fdk_") {
		t.Fatalf("dev did not print the demo curl line:\n%s", out)
	}
	hook := e.createWebhook(t, map[string]any{"url": rc.URL()})
	rc.setSecret(hook.Secret)

	t.Run("a stored reading arrives signed", func(t *testing.T) {
		ts := e.postReading(t, 21.5)
		d := rc.next(t, 10*time.Second)
		if !d.Verified || d.Type != "metric.value" || d.UserAgent != "Furrow-Webhooks/1.0" || !strings.HasPrefix(d.EventID, "evt_") {
			t.Fatalf("delivery %+v", d)
		}
		var data struct {
			DeviceID  string `json:"device_id"`
			Value     string
			Timestamp int64
		}
		if err := json.Unmarshal(d.Data, &data); err != nil || data.DeviceID != e.fx.DeviceID || data.Value != "21.5" || fmt.Sprint(data.Timestamp) != ts {
			t.Fatalf("data %s (%v)", d.Data, err)
		}
	})

	t.Run("both verifiers accept the same real delivery", func(t *testing.T) {
		e.postReading(t, 7)
		d := rc.next(t, 10*time.Second)
		if !d.FurrowVerified || !d.StandardVerified || d.WebhookID != d.EventID {
			t.Fatalf("delivery %+v: want it verified by Furrow's verifier and the Standard Webhooks library, with webhook-id the event id", d)
		}
		r := do(t, nil, "GET", e.f.URL+"/api/openapi.json", nil)
		if r.Status != 200 || !bytes.Equal(r.Body, api.OpenAPI) {
			t.Fatalf("GET /api/openapi.json: %d, want the embedded document", r.Status)
		}
	})

	t.Run("500 then 200 is retried with a new delivery id", func(t *testing.T) {
		rc.setAnswer(func(_ string, nth int) int {
			if nth == 1 {
				return 500
			}
			return 200
		})
		e.postReading(t, 1)
		first, second := rc.next(t, 10*time.Second), rc.next(t, 10*time.Second)
		if first.EventID != second.EventID || first.Status != 500 || second.Status != 200 || first.DeliveryID == second.DeliveryID || !second.Verified ||
			first.WebhookID != first.EventID || second.WebhookID != first.EventID {
			t.Fatalf("attempts %+v then %+v", first, second)
		}
		waitFor(t, 5*time.Second, func() bool {
			var n int
			for _, a := range e.attempts(t, hook.ID) {
				if a.EventID == first.EventID && (a.StatusCode == 500 && a.Attempt == 1 || a.StatusCode == 200 && a.Attempt == 2) {
					n++
				}
			}
			return n == 2
		})
		if w := e.webhook(t, hook.ID); !w.Enabled || w.ConsecutiveFailures != 0 {
			t.Fatalf("a delivered chain changed the webhook: %+v", w)
		}
	})

	tc, err := client.Dial(client.Options{HostPort: e.temporal, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	checkDisableReenableReset(t, e, tc, hook)
}

// checkDisableReenableReset checks, on a webhook that has delivered at
// least one event, what operators and support do: reset a delivery
// workflow to deliver again, the disable-after-5 rule with re-enabling by
// the API and by the reenable signal, and finding deliveries by search
// attributes.
func checkDisableReenableReset(t *testing.T, e *devEnv, tc client.Client, hook webhookState) {
	rc := e.rc
	t.Run("resetting a delivery workflow delivers again", func(t *testing.T) {
		rc.mu.Lock()
		first := rc.got[0]
		rc.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id := "delivery/" + hook.ID + "/" + first.EventID
		// The receiver answers before the workflow records the attempt.
		if err := tc.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			t.Fatalf("delivery workflow: %v", err)
		}
		// The operator's "reset to the first workflow task" in the UI.
		var firstTask int64
		iter := tc.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() && firstTask == 0 {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				firstTask = ev.GetEventId()
			}
		}
		_, err := tc.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
			Namespace:                 "default",
			WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id},
			Reason:                    "operator replay",
			WorkflowTaskFinishEventId: firstTask,
			RequestId:                 uuid.NewString(),
		})
		if err != nil {
			t.Fatalf("reset: %v", err)
		}
		d := rc.next(t, 30*time.Second)
		if d.EventID != first.EventID || d.DeliveryID == first.DeliveryID || !d.Verified {
			t.Fatalf("after reset got %+v, want %s again with a new delivery id", d, first.EventID)
		}
	})

	t.Run("five rejected chains disable; the API re-enables; skipped events are redelivered", func(t *testing.T) {
		since := time.Now().UnixMilli()
		skipped := e.failFiveChains(t, hook.ID)
		r := do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+hook.ID+"/enable", nil, bearer(e.fx.Token)...)
		expect(t, r, 200, "")
		var w webhookState
		r.JSON(t, &w)
		if !w.Enabled || w.ConsecutiveFailures != 0 {
			t.Fatalf("after enable: %s", r.Body)
		}
		rc.setAnswer(func(string, int) int { return 204 })
		e.postReading(t, 3)
		if d := rc.next(t, 30*time.Second); d.Status != 204 {
			t.Fatalf("after re-enabling: %+v", d)
		}
		r = do(t, nil, "POST", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+hook.ID+"/redeliver", map[string]any{"since_ms": since}, bearer(e.fx.Token)...)
		expect(t, r, 202, "")
		var n struct{ Count int }
		r.JSON(t, &n)
		if n.Count != 7 { // five rejected, one skipped, one delivered
			t.Fatalf("redelivered %d events, want 7", n.Count)
		}
		got := map[string]bool{}
		for i := 0; i < n.Count; i++ {
			got[rc.next(t, 30*time.Second).EventID] = true
		}
		if !got[skipped] || len(got) != 7 {
			t.Fatalf("redelivery reached %v, want 7 events including the skipped %s", got, skipped)
		}
	})

	t.Run("support re-enables with the reenable signal", func(t *testing.T) {
		e.failFiveChains(t, hook.ID)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := tc.SignalWorkflow(ctx, "webhook/"+hook.ID, "", "reenable", nil); err != nil {
			t.Fatalf("signal: %v", err)
		}
		waitFor(t, 30*time.Second, func() bool {
			w := e.webhook(t, hook.ID)
			return w.Enabled && w.ConsecutiveFailures == 0
		})
		// Deliveries are findable by the Furrow search attributes.
		waitFor(t, 30*time.Second, func() bool {
			resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default",
				Query:     fmt.Sprintf("FurrowWebhookId = '%s' AND FurrowEventType = 'metric.value' AND FurrowFarmId = '%s'", hook.ID, e.fx.FarmID),
			})
			return err == nil && len(resp.Executions) >= 8
		})
	})

	t.Run("an operator reads a failed chain in Temporal", func(t *testing.T) {
		e.checkOperatorView(t, hook.ID)
	})
}

// failFiveChains makes the receiver reject everything and posts readings
// until the webhook is disabled after exactly five failed chains; a sixth
// event is then recorded as skipped and not sent.
func (e *devEnv) failFiveChains(t *testing.T, hookID string) (skippedEvent string) {
	t.Helper()
	e.rc.setAnswer(func(string, int) int { return 400 })
	for i := 0; i < 5; i++ {
		e.postReading(t, 400+i)
		if d := e.rc.next(t, time.Minute); d.Status != 400 {
			t.Fatalf("chain %d: %+v", i+1, d)
		}
	}
	waitFor(t, time.Minute, func() bool {
		w := e.webhook(t, hookID)
		return !w.Enabled && w.ConsecutiveFailures == 5
	})
	e.postReading(t, 999)
	e.rc.quiet(t, 2*time.Second)
	waitFor(t, time.Minute, func() bool {
		rows := e.attempts(t, hookID)
		if len(rows) > 0 && strings.Contains(rows[0].Error, "skipped") {
			skippedEvent = rows[0].EventID
		}
		return skippedEvent != ""
	})
	return skippedEvent
}
