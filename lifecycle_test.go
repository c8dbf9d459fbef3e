package furrow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestSubscribes(t *testing.T) {
	none := Webhook{}
	listed := Webhook{EventTypes: []string{EventWebhookDisabled, EventTriggerFired}}
	cases := []struct {
		w    Webhook
		typ  string
		want bool
	}{
		{none, EventMetricValue, true},
		{none, EventRecommendationCreated, true},
		{none, EventWebhookDisabled, false},
		{none, EventWebhookEnabled, false},
		{none, EventWebhookTest, false},
		{listed, EventWebhookDisabled, true},
		{listed, EventTriggerFired, true},
		{listed, EventWebhookEnabled, false},
		{listed, EventMetricValue, false},
		{Webhook{EventTypes: []string{EventWebhookTest}}, EventWebhookTest, false},
	}
	for _, c := range cases {
		if got := c.w.Subscribes(c.typ); got != c.want {
			t.Errorf("%v.Subscribes(%s) = %v, want %v", c.w.EventTypes, c.typ, got, c.want)
		}
	}
	if IsEventType(EventWebhookTest) || !IsEventType(EventWebhookEnabled) {
		t.Error("webhook.test must not be a farm event type, webhook.enabled must")
	}
}

func TestTransitionEvent(t *testing.T) {
	hook, farm := uuid.New(), uuid.New()
	off := WebhookTransition{WebhookID: hook, Seq: 3, AtMs: 42, Failures: 5, LastError: "timeout"}
	e := off.Event(farm)
	if e.Type != EventWebhookDisabled || e.FarmID != farm || e.OccurredAtMs != 42 || off.Cause() != CauseFailedChains {
		t.Fatalf("disabling event %+v cause %q", e, off.Cause())
	}
	if string(e.Data) != `{"webhook_id":"`+hook.String()+`","failed_chains":5,"last_status_code":0,"last_error":"timeout"}` {
		t.Fatalf("data %s", e.Data)
	}
	if again := off.Event(farm); again.ID != e.ID {
		t.Fatalf("the same transition has ids %s and %s", e.ID, again.ID)
	}
	on := WebhookTransition{WebhookID: hook, Seq: 4, AtMs: 43, Enabled: true, By: EnabledByAPI}
	e2 := on.Event(farm)
	var data WebhookEnabledData
	if e2.ID == e.ID || e2.Type != EventWebhookEnabled || json.Unmarshal(e2.Data, &data) != nil || data.By != EnabledByAPI || on.Cause() != EnabledByAPI {
		t.Fatalf("enabling event %+v", e2)
	}
	answered := WebhookTransition{WebhookID: hook, Seq: 5, Failures: 5, LastStatusCode: 400, LastError: "endpoint answered 400"}
	if !strings.Contains(string(answered.Event(farm).Data), `"last_status_code":400,"last_error":""`) {
		t.Fatalf("an answered attempt's error text is kept: %s", answered.Event(farm).Data)
	}
	other := WebhookTransition{WebhookID: uuid.New(), Seq: 3}
	if other.Event(farm).ID == e.ID {
		t.Fatal("two webhooks' transitions share an id")
	}
}
