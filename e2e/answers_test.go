package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/webhook"
)

// firstRetryDelay is the first delay of the retry schedule newDevEnv sets
// (FURROW_RETRY_SCHEDULE=1s,…).
const firstRetryDelay = time.Second

// TestAnswersEndToEnd shows how each kind of answer ends or continues a
// delivery chain, as SPEC's "Delivery of one event" table says: a 302 is a
// failed delivery, recorded once, never retried and never followed to its
// Location; 408, 429, a connection closed without an answer and a 503 are
// each retried until a 200 delivers the event. The attempt log keeps one
// row per attempt, newest first, with the status (0 for no answer), the
// answer's body and the X-Service-Delivery id the receiver saw, and a
// delivered chain leaves the webhook's failure counter at 0.
func TestAnswersEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and webhook receivers")
	e := newDevEnv(t)
	// The harness receiver is the redirect's target: it must get nothing.
	target := e.rc
	redirecting := newScriptedReceiver(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", target.URL())
		w.WriteHeader(http.StatusFound)
	})
	redirectHook := e.createWebhook(t, map[string]any{"url": redirecting.URL()})

	t.Run("a 302 fails the chain at once and is not followed", func(t *testing.T) {
		e.postReading(t, 302)
		first := redirecting.waitRequests(t, "", 1, 30*time.Second)[0]
		rows := e.eventAttempts(t, redirectHook.ID, first.EventID, 30*time.Second, func(rows []answerRow) bool { return len(rows) >= 1 })
		if rows[0].StatusCode != http.StatusFound || rows[0].Attempt != 1 || rows[0].DeliveryID != first.DeliveryID {
			t.Fatalf("attempt row %+v, want attempt 1 answered 302 with delivery id %s", rows[0], first.DeliveryID)
		}
		// Wait past the first retry delay: a retry or a followed redirect
		// would have come by then.
		target.quiet(t, 3*firstRetryDelay)
		if rows := e.answerRows(t, redirectHook.ID, first.EventID); len(rows) != 1 {
			t.Fatalf("%d attempt rows for %s after %s, want exactly 1: %+v", len(rows), first.EventID, 3*firstRetryDelay, rows)
		}
		if got := redirecting.requests(first.EventID); len(got) != 1 {
			t.Fatalf("the redirecting receiver got %d requests for %s, want 1: %+v", len(got), first.EventID, got)
		}
	})

	t.Run("408, 429, no answer and 503 are retried until a 200 delivers", func(t *testing.T) {
		answers := newScriptedReceiver(t,
			status(http.StatusRequestTimeout, ""),
			status(http.StatusTooManyRequests, ""),
			hangUp(t),
			status(http.StatusServiceUnavailable, "busy: db"),
			status(http.StatusOK, "ok"),
		)
		hook := e.createWebhook(t, map[string]any{"url": answers.URL()})
		e.postReading(t, 200)
		first := answers.waitRequests(t, "", 1, 30*time.Second)[0]
		seen := answers.waitRequests(t, first.EventID, 5, 60*time.Second)
		rows := e.eventAttempts(t, hook.ID, first.EventID, 30*time.Second, func(rows []answerRow) bool {
			return len(rows) >= 5 || len(rows) > 0 && rows[0].StatusCode == http.StatusOK
		})
		wantStatus := []int{200, 503, 0, 429, 408}
		if len(rows) != len(wantStatus) {
			t.Fatalf("%d attempt rows for %s, want %d: %+v", len(rows), first.EventID, len(wantStatus), rows)
		}
		for i, row := range rows {
			nth := len(rows) - i // rows are newest first
			if row.StatusCode != wantStatus[i] || row.Attempt != nth {
				t.Errorf("row %d: attempt %d status %d, want attempt %d status %d", i, row.Attempt, row.StatusCode, nth, wantStatus[i])
			}
			if row.DeliveryID == "" || row.DeliveryID != seen[nth-1].DeliveryID {
				t.Errorf("row %d (attempt %d): delivery_id %q, want the %s header request %d carried, %q",
					i, row.Attempt, row.DeliveryID, webhook.DeliveryHeader, nth, seen[nth-1].DeliveryID)
			}
		}
		if rows[0].ResponseBody != "ok" {
			t.Errorf("200 row response_body %q, want %q", rows[0].ResponseBody, "ok")
		}
		if rows[1].ResponseBody != "busy: db" {
			t.Errorf("503 row response_body %q, want %q", rows[1].ResponseBody, "busy: db")
		}
		if rows[2].Error == "" || rows[2].ResponseBody != "" {
			t.Errorf("no-answer row %+v, want an error saying why and no response_body", rows[2])
		}
		if w := e.webhook(t, hook.ID); !w.Enabled || w.ConsecutiveFailures != 0 {
			t.Errorf("after a delivered chain the webhook is %+v, want enabled with consecutive_failures 0", w)
		}
		// The chain is over: nothing more is sent for the event.
		time.Sleep(3 * firstRetryDelay)
		if got := answers.requests(first.EventID); len(got) != 5 {
			t.Errorf("%d requests for %s after delivery, want 5: %+v", len(got), first.EventID, got)
		}
	})

	// Both events reached the redirecting webhook; neither redirect was
	// followed.
	target.mu.Lock()
	followed := len(target.got)
	target.mu.Unlock()
	if followed != 0 {
		t.Fatalf("the redirect target got %d requests, want none", followed)
	}
}

// answerRow is an attempt row with the answer's body.
type answerRow struct {
	attemptRow
	ResponseBody string `json:"response_body"`
}

// answerRows returns the webhook's attempt rows for one event, newest
// first, as the attempts API lists them.
func (e *devEnv) answerRows(t *testing.T, webhookID, eventID string) []answerRow {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+webhookID+"/attempts?limit=100", nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var all, rows []answerRow
	r.JSON(t, &all)
	for _, a := range all {
		if a.EventID == eventID {
			rows = append(rows, a)
		}
	}
	return rows
}

// eventAttempts polls answerRows until done accepts them, failing t with
// the last rows seen after limit.
func (e *devEnv) eventAttempts(t *testing.T, webhookID, eventID string, limit time.Duration, done func([]answerRow) bool) []answerRow {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		rows := e.answerRows(t, webhookID, eventID)
		if done(rows) {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt rows for %s within %s: %+v", eventID, limit, rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// seenRequest is one request a scriptedReceiver got.
type seenRequest struct {
	EventID    string
	DeliveryID string
}

// scriptedReceiver is a local HTTPS webhook endpoint that answers the nth
// request for an event with the nth of its answers (the last one repeats).
// httptest serves every TLS server with the same certificate, the one
// newReceiver writes to the CA file furrow trusts.
type scriptedReceiver struct {
	srv     *httptest.Server
	answers []func(http.ResponseWriter)

	mu  sync.Mutex
	got []seenRequest
}

func newScriptedReceiver(t *testing.T, answers ...func(http.ResponseWriter)) *scriptedReceiver {
	t.Helper()
	sr := &scriptedReceiver{answers: answers}
	sr.srv = httptest.NewTLSServer(http.HandlerFunc(sr.serve))
	t.Cleanup(sr.srv.Close)
	return sr
}

// URL is the endpoint to register.
func (sr *scriptedReceiver) URL() string { return sr.srv.URL + "/hook" }

func (sr *scriptedReceiver) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	s := seenRequest{EventID: r.Header.Get(webhook.IDHeader), DeliveryID: r.Header.Get(webhook.DeliveryHeader)}
	sr.mu.Lock()
	nth := 0
	for _, g := range sr.got {
		if g.EventID == s.EventID {
			nth++
		}
	}
	sr.got = append(sr.got, s)
	sr.mu.Unlock()
	sr.answers[min(nth, len(sr.answers)-1)](w)
}

// requests returns the requests for eventID so far, in arrival order; all
// of them when eventID is "".
func (sr *scriptedReceiver) requests(eventID string) []seenRequest {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var out []seenRequest
	for _, g := range sr.got {
		if eventID == "" || g.EventID == eventID {
			out = append(out, g)
		}
	}
	return out
}

// waitRequests waits until n requests for eventID ("" for any) arrived.
func (sr *scriptedReceiver) waitRequests(t *testing.T, eventID string, n int, limit time.Duration) []seenRequest {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got := sr.requests(eventID)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests for event %q within %s: %+v", len(got), n, eventID, limit, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// status answers code with body.
func status(code int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// hangUp closes the connection without answering.
func hangUp(t *testing.T) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		if err := conn.Close(); err != nil {
			t.Errorf("closing the hijacked connection: %v", err)
		}
	}
}
