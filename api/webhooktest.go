package api

import (
	"net/http"

	"github.com/furrowhq/furrow"
)

// testKeyPrefix starts the rate-limit keys of test deliveries, apart from
// the device credentials' keys.
const testKeyPrefix = "webhook-test:"

// testWebhook sends one webhook.test event to the webhook only, through the
// delivery engine like any delivery (an attempt row, signed, a workflow),
// enabled or not and whatever its event types: 202 {event_id}. The attempt
// log and the health summary show the result.
func (s *server) testWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	err = limit(w, r, s.TestLimiter, testKeyPrefix+wh.ID.String(), "Over the limit of test deliveries for this webhook; retry after the number of seconds in retry-after.")
	if err != nil {
		return err
	}
	e := furrow.NewWebhookTestEvent(wh, furrow.Millis(s.Clock.Now()))
	if err := s.Webhooks.AddTestEvent(r.Context(), wh.ID, e); err != nil {
		return err
	}
	if err := s.Delivery.TestDelivery(r.Context(), wh, e); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"event_id": e.ID})
	return nil
}
