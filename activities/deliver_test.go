package activities_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/memstore"
	"github.com/furrowhq/furrow/webhook"
)

const secret = "whsec_do-not-leak-0123456789"

// store is the in-memory store holding one webhook and one event, and the
// calls the activities made of it.
type store struct {
	*memstore.Store
	calls *memstore.Recorder
	hook  furrow.Webhook
	event furrow.Event
}

// attempts returns the delivery log's rows in the order written.
func (s *store) attempts() []furrow.Attempt { return s.calls.Attempts() }

// newStore stores hook and event on a farm of their own.
func newStore(t *testing.T, hook furrow.Webhook, event furrow.Event) *store {
	t.Helper()
	ctx := t.Context()
	m := memstore.New(furrow.SystemClock{})
	owner, _, err := m.CreateUser(ctx, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	farm, err := m.CreateFarm(ctx, owner.ID, "North")
	if err != nil {
		t.Fatal(err)
	}
	hook.FarmID, event.FarmID = farm.ID, farm.ID
	if hook, err = m.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	if _, err = m.CreateEvent(ctx, event); err != nil {
		t.Fatal(err)
	}
	return &store{Store: m, calls: m.Record(), hook: hook, event: event}
}

// setHook replaces the stored webhook by w, under the same id.
func (s *store) setHook(t *testing.T, w furrow.Webhook) {
	t.Helper()
	if err := s.DeleteWebhook(t.Context(), s.hook.FarmID, s.hook.ID); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.hook, err = s.CreateWebhook(t.Context(), w); err != nil {
		t.Fatal(err)
	}
}

// received is one request seen by the endpoint.
type received struct {
	header http.Header
	body   []byte
}

func setup(t *testing.T, answer func(w http.ResponseWriter)) (*store, *activities.Activities, *[]received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		answer(w)
	}))
	t.Cleanup(srv.Close)
	s := newStore(t, furrow.Webhook{ID: uuid.New(), URL: srv.URL + "/hook", Secret: secret, Enabled: true},
		furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue,
			OccurredAtMs: 1714564800000, Data: []byte(`{"device_id":"x","value":"21.50"}`)})
	now := time.UnixMilli(1714564800123)
	acts := &activities.Activities{Webhooks: s, HTTP: srv.Client(), Clock: furrow.ClockFunc(func() time.Time { return now })}
	return s, acts, &got
}

// deliver runs the Deliver activity as attempt `attempt` of a chain.
func deliver(t *testing.T, s *store, acts *activities.Activities, attempt int) (activities.DeliverResult, error) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in := activities.DeliverInput{WebhookID: s.hook.ID, EventID: s.event.ID, FirstAttempt: attempt,
		Schedule: furrow.Durations([]time.Duration{time.Minute, time.Hour})}
	v, err := env.ExecuteActivity(acts.Deliver, in)
	var res activities.DeliverResult
	if err == nil {
		if gerr := v.Get(&res); gerr != nil {
			t.Fatal(gerr)
		}
	}
	return res, err
}

func TestDeliverSendsSignedEnvelope(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(202) })
	res, err := deliver(t, s, acts, 1)
	if err != nil || res.StatusCode != 202 || res.Skipped || res.Attempt != 1 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if len(*got) != 1 {
		t.Fatalf("%d requests, want 1", len(*got))
	}
	r := (*got)[0]
	if ct, ua := r.header.Get("Content-Type"), r.header.Get("User-Agent"); ct != "application/json" || ua != "Furrow-Webhooks/1.0" {
		t.Errorf("Content-Type %q User-Agent %q", ct, ua)
	}
	if err := webhook.Verify(secret, r.header.Get(webhook.SignatureHeader), r.body, time.UnixMilli(1714564800123)); err != nil {
		t.Errorf("signature over the raw body does not verify: %v", err)
	}
	if err := webhook.VerifyStandard(secret, r.header, r.body, time.UnixMilli(1714564800123)); err != nil || r.header.Get(webhook.IDHeader) != s.event.ID {
		t.Errorf("Standard Webhooks headers (webhook-id %q): %v", r.header.Get(webhook.IDHeader), err)
	}
	if want := `"data":{"device_id":"x","value":"21.50"}`; !strings.Contains(string(r.body), want) {
		t.Errorf("body %s lacks %s", r.body, want)
	}
	did, err := uuid.Parse(r.header.Get(webhook.DeliveryHeader))
	if err != nil {
		t.Fatalf("delivery header: %v", err)
	}
	a := s.attempts()[0]
	if a.DeliveryID != did || a.StatusCode != 202 || a.Attempt != 1 || a.EventID != s.event.ID || a.AtMs != 1714564800123 {
		t.Errorf("attempt row = %+v", a)
	}
}

func TestDeliverNewDeliveryIDPerAttempt(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(500) })
	_, err1 := deliver(t, s, acts, 1)
	_, err2 := deliver(t, s, acts, 2)
	if err1 == nil || err2 == nil {
		t.Fatal("a 500 must fail the attempt")
	}
	a, b := (*got)[0].header.Get(webhook.DeliveryHeader), (*got)[1].header.Get(webhook.DeliveryHeader)
	if a == "" || a == b {
		t.Fatalf("delivery ids %q and %q, want distinct", a, b)
	}
	if a, b := (*got)[0].header.Get(webhook.IDHeader), (*got)[1].header.Get(webhook.IDHeader); a != s.event.ID || b != a {
		t.Fatalf("webhook-id %q then %q, want the event id %s on every attempt", a, b, s.event.ID)
	}
	if s.attempts()[0].Attempt != 1 || s.attempts()[1].Attempt != 2 {
		t.Errorf("attempt numbers %d, %d", s.attempts()[0].Attempt, s.attempts()[1].Attempt)
	}
}

func TestDeliverErrorsFollowSchedule(t *testing.T) {
	for status, wantRetry := range map[int]bool{500: true, 503: true, 408: true, 429: true, 400: false, 410: false, 302: false} {
		s, acts, _ := setup(t, func(w http.ResponseWriter) {
			w.Header().Set("Location", "https://elsewhere.example/")
			w.WriteHeader(status)
		})
		_, err := deliver(t, s, acts, 2)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) {
			t.Fatalf("status %d: err %v, want an application error", status, err)
		}
		if appErr.NonRetryable() == wantRetry {
			t.Errorf("status %d: non-retryable %v", status, appErr.NonRetryable())
		}
		if wantRetry && appErr.NextRetryDelay() != time.Hour {
			t.Errorf("status %d: next delay %s, want the schedule's second delay", status, appErr.NextRetryDelay())
		}
		var attempt, code int
		if err := appErr.Details(&attempt, &code); err != nil || attempt != 2 || code != status {
			t.Errorf("status %d: details attempt %d status %d (%v)", status, attempt, code, err)
		}
		if s.attempts()[0].StatusCode != status {
			t.Errorf("status %d: row says %d (redirect followed?)", status, s.attempts()[0].StatusCode)
		}
	}
}

func TestDeliverBoundsResponseBody(t *testing.T) {
	s, acts, _ := setup(t, func(w http.ResponseWriter) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte(strings.Repeat("é", furrow.MaxResponseBody)))
	})
	if _, err := deliver(t, s, acts, 1); err == nil {
		t.Fatal("want an error")
	}
	if n := len(s.attempts()[0].ResponseBody); n > furrow.MaxResponseBody+2 || n < furrow.MaxResponseBody-2 {
		t.Fatalf("stored %d bytes of the answer, want about %d", n, furrow.MaxResponseBody)
	}
}

func TestDeliverSkipsDisabledAndDeleted(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(200) })
	if _, err := s.SetWebhookState(t.Context(), s.hook.ID, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	res, err := deliver(t, s, acts, 4)
	if err != nil || !res.Skipped || len(*got) != 0 {
		t.Fatalf("disabled: res %+v err %v requests %d", res, err, len(*got))
	}
	if err := s.DeleteWebhook(t.Context(), s.hook.FarmID, s.hook.ID); err != nil {
		t.Fatal(err)
	}
	in := activities.DeliverInput{WebhookID: s.hook.ID, EventID: s.event.ID, FirstAttempt: 1} // a deleted webhook
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	if _, err := env.ExecuteActivity(acts.Deliver, in); err != nil {
		t.Fatal(err)
	}
	if s.attempts()[0].Error != "skipped: webhook disabled" || s.attempts()[0].Attempt != 4 {
		t.Errorf("disabled row = %+v", s.attempts()[0])
	}
	if s.attempts()[1].Error != "skipped: webhook deleted" {
		t.Errorf("deleted row = %+v", s.attempts()[1])
	}
}

func TestDeliverNeverLeaksSecret(t *testing.T) {
	s, acts, _ := setup(t, func(w http.ResponseWriter) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte("nope"))
	})
	unreachable := s.hook
	unreachable.URL = "http://127.0.0.1:1/" + secret // secret in sight
	s.setHook(t, unreachable)
	_, err := deliver(t, s, acts, 1)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
	a := s.attempts()[0]
	if strings.Contains(a.Error+a.ResponseBody, secret) || !strings.HasPrefix(a.Error, "connection failed") {
		t.Fatalf("attempt row = %+v", a)
	}
}

// counts keeps the attempts and chains the activities record.
type counts struct {
	activities.Metrics
	mu       sync.Mutex
	attempts map[string]int
	chains   map[string]int
}

func (c *counts) DeliveryAttempt(result string, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts[result]++
}

func (c *counts) DeliveryChain(outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chains[outcome]++
}

func (c *counts) Delivered(time.Duration) {}

// An attempt that could not read its webhook sent nothing: the delivery
// failure ratio, which measures endpoints, does not count it; the chain it
// ends is still a failed one.
func TestDeliverUnsentIsNoAttemptOfTheEndpoint(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	c := &counts{attempts: map[string]int{}, chains: map[string]int{}}
	acts.Metrics = c
	s.Fault(memstore.Fail(errors.New("connection refused"), "AttemptParts"))
	for _, attempt := range []int{1, 3} { // a retried one, then the chain's last
		if _, err := deliver(t, s, acts, attempt); !activities.Unsent(err) {
			t.Fatalf("attempt %d: %v; want an unsent failure", attempt, err)
		}
	}
	if len(*got) != 0 || len(c.attempts) != 0 || c.chains[furrow.OutcomeFailed] != 1 {
		t.Fatalf("sent %d, attempts counted %v, chains %v; want none sent or counted, one failed chain", len(*got), c.attempts, c.chains)
	}
}

// SPEC: a 2xx answer's body is not inspected. An endpoint that answers 200
// with a body that reads as an error has the event delivered: the attempt
// succeeds, ends its chain delivered, and the log keeps the body as sent.
func TestDeliver2xxBodyIsNotInspected(t *testing.T) {
	for _, body := range []string{`{"error":"failed"}`, `{"ok":false,"status":500}`, "Internal Server Error"} {
		s, acts, got := setup(t, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, body)
		})
		c := &counts{attempts: map[string]int{}, chains: map[string]int{}}
		acts.Metrics = c
		res, err := deliver(t, s, acts, 1)
		if err != nil || res.StatusCode != http.StatusOK || res.Skipped {
			t.Fatalf("200 with body %s: result %+v, %v; want delivered", body, res, err)
		}
		if len(*got) != 1 || c.attempts[furrow.OutcomeDelivered] != 1 || c.chains[furrow.OutcomeDelivered] != 1 || len(c.chains) != 1 {
			t.Fatalf("200 with body %s: sent %d, attempts counted %v, chains %v; want one sent, delivered", body, len(*got), c.attempts, c.chains)
		}
		if as := s.attempts(); len(as) != 1 || as[0].StatusCode != http.StatusOK || as[0].ResponseBody != body || as[0].Error != "" {
			t.Fatalf("200 with body %s: attempt rows %+v; want one 200 keeping the body, no error", body, as)
		}
	}
}
