package activities_test

import (
	"context"
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
	"github.com/furrowhq/furrow/store/storetest"
	"github.com/furrowhq/furrow/webhook"
)

const secret = "whsec_do-not-leak-0123456789"

// store is an in-memory furrow.WebhookService and furrow.EventService.
type store struct {
	furrow.WebhookService
	furrow.EventService
	mu       sync.Mutex
	hook     furrow.Webhook
	event    furrow.Event
	attempts []furrow.Attempt
}

func (s *store) WebhookByID(_ context.Context, id uuid.UUID) (furrow.Webhook, error) {
	if id != s.hook.ID {
		return furrow.Webhook{}, furrow.Errorf(furrow.ENOTFOUND, "webhook not found")
	}
	return s.hook, nil
}

func (s *store) Event(_ context.Context, id string) (furrow.Event, error) {
	if id != s.event.ID {
		return furrow.Event{}, furrow.Errorf(furrow.ENOTFOUND, "event not found")
	}
	return s.event, nil
}

func (s *store) SetWebhookState(_ context.Context, id uuid.UUID, enabled bool, failures int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.hook.ID {
		return furrow.Errorf(furrow.ENOTFOUND, "webhook not found")
	}
	s.hook.Enabled, s.hook.ConsecutiveFailures = enabled, failures
	return nil
}

func (s *store) AddAttempt(_ context.Context, a furrow.Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, a)
	return nil
}

// The fake passes the suite the PostgreSQL store passes.
func TestFakeConformance(t *testing.T) {
	storetest.DeliveryStore(t, func(*testing.T) storetest.DeliverySubject {
		s := &store{}
		seed := func(_ context.Context, w furrow.Webhook, e furrow.Event) (furrow.Webhook, furrow.Event, error) {
			w.FarmID = uuid.New()
			e.FarmID = w.FarmID
			s.hook, s.event = w, e
			return w, e, nil
		}
		return storetest.DeliverySubject{Webhooks: s, Events: s, Seed: seed}
	})
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
	s := &store{
		hook: furrow.Webhook{ID: uuid.New(), URL: srv.URL + "/hook", Secret: secret, Enabled: true},
		event: furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventMetricValue, FarmID: uuid.New(),
			OccurredAtMs: 1714564800000, Data: []byte(`{"device_id":"x","value":"21.50"}`)},
	}
	now := time.UnixMilli(1714564800123)
	acts := &activities.Activities{Webhooks: s, Events: s, HTTP: srv.Client(), Clock: furrow.ClockFunc(func() time.Time { return now })}
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
	a := s.attempts[0]
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
	if s.attempts[0].Attempt != 1 || s.attempts[1].Attempt != 2 {
		t.Errorf("attempt numbers %d, %d", s.attempts[0].Attempt, s.attempts[1].Attempt)
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
		if s.attempts[0].StatusCode != status {
			t.Errorf("status %d: row says %d (redirect followed?)", status, s.attempts[0].StatusCode)
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
	if n := len(s.attempts[0].ResponseBody); n > furrow.MaxResponseBody+2 || n < furrow.MaxResponseBody-2 {
		t.Fatalf("stored %d bytes of the answer, want about %d", n, furrow.MaxResponseBody)
	}
}

func TestDeliverSkipsDisabledAndDeleted(t *testing.T) {
	s, acts, got := setup(t, func(w http.ResponseWriter) { w.WriteHeader(200) })
	s.hook.Enabled = false
	res, err := deliver(t, s, acts, 4)
	if err != nil || !res.Skipped || len(*got) != 0 {
		t.Fatalf("disabled: res %+v err %v requests %d", res, err, len(*got))
	}
	s.hook.ID = uuid.New() // the delivery now names a deleted webhook
	in := activities.DeliverInput{WebhookID: uuid.New(), EventID: s.event.ID, FirstAttempt: 1}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	if _, err := env.ExecuteActivity(acts.Deliver, in); err != nil {
		t.Fatal(err)
	}
	if s.attempts[0].Error != "skipped: webhook disabled" || s.attempts[0].Attempt != 4 {
		t.Errorf("disabled row = %+v", s.attempts[0])
	}
	if s.attempts[1].Error != "skipped: webhook deleted" {
		t.Errorf("deleted row = %+v", s.attempts[1])
	}
}

func TestDeliverNeverLeaksSecret(t *testing.T) {
	s, acts, _ := setup(t, func(w http.ResponseWriter) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte("nope"))
	})
	s.hook.URL = "http://127.0.0.1:1/" + secret // unreachable, secret in sight
	_, err := deliver(t, s, acts, 1)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("err = %v", err)
	}
	a := s.attempts[0]
	if strings.Contains(a.Error+a.ResponseBody, secret) || !strings.HasPrefix(a.Error, "connection failed") {
		t.Fatalf("attempt row = %+v", a)
	}
}
