package api

import (
	"net/http"
	"slices"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/safehttp"
	"github.com/google/uuid"
)

// reenablePoll is how often enabling waits to see the workflow's change.
const reenablePoll = 50 * time.Millisecond

// createWebhook registers an endpoint for the farm's events: 201 with the
// webhook, its secret included.
func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		URL          string   `json:"url"`
		EventTypes   []string `json:"event_types"`
		MaxPerSecond *float64 `json:"max_per_second"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	if err := safehttp.ValidateURL(in.URL, s.cfg.AllowPrivateWebhooks); err != nil {
		return err
	}
	types, err := eventTypes(in.EventTypes)
	if err != nil {
		return err
	}
	if err := furrow.ValidateMaxPerSecond(in.MaxPerSecond); err != nil {
		return err
	}
	wh, err := s.Webhooks.CreateWebhook(r.Context(), furrow.Webhook{
		ID: uuid.New(), FarmID: currentFarm(r), URL: in.URL, Secret: furrow.NewWebhookSecret(),
		Enabled: true, EventTypes: types, MaxPerSecond: in.MaxPerSecond,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, newWebhookView(wh))
	return nil
}

// eventTypes validates and de-duplicates event types; empty means the
// default four (furrow.Webhook.Subscribes).
func eventTypes(in []string) ([]string, error) {
	out := []string{}
	for _, t := range in {
		if t == furrow.EventWebhookTest {
			return nil, furrow.Errorf(furrow.EINVALID, "The field event_types cannot list %s: it goes only to the webhook tested.", t)
		}
		if !furrow.IsEventType(t) {
			return nil, furrow.Errorf(furrow.EINVALID, "The field event_types holds an unknown event type.")
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// webhookOut makes event_types encode as [] rather than null.
func webhookOut(w furrow.Webhook) furrow.Webhook {
	w.EventTypes = nonNil(w.EventTypes)
	return w
}

// listWebhooks lists the farm's webhooks, secrets and health included, the
// health of all of them read at once: 200.
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := s.Webhooks.Webhooks(r.Context(), currentFarm(r))
	if err != nil {
		return err
	}
	out, err := s.withHealth(r, hooks)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// farmWebhook loads the {webhook} of the path within the current farm.
func (s *server) farmWebhook(r *http.Request) (furrow.Webhook, error) {
	id, err := pathID(r, "webhook")
	if err != nil {
		return furrow.Webhook{}, err
	}
	return s.Webhooks.Webhook(r.Context(), currentFarm(r), id)
}

// getWebhook answers one webhook, secret and health included: 200.
func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	out, err := s.oneWithHealth(r, wh)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteWebhook removes a webhook: 204.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "webhook")
	if err != nil {
		return err
	}
	if err := s.Webhooks.DeleteWebhook(r.Context(), currentFarm(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// enableWebhook signals the webhook's workflow to re-enable it and waits up
// to ReenableWait for the change: 200 with the enabled webhook, or 202 with
// its current state and a reason when the workflow has not applied it yet
// (the signal is delivered; the change follows).
func (s *server) enableWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	if err := s.Delivery.Reenable(r.Context(), wh.ID); err != nil {
		return err
	}
	wh, done, err := s.awaitEnabled(r, wh)
	if err != nil {
		return err
	}
	out, err := s.oneWithHealth(r, wh)
	if err != nil {
		return err
	}
	if done {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	writeJSON(w, http.StatusAccepted, struct {
		webhookView
		Reason string `json:"reason"`
	}{out, "Re-enabling was requested and will apply shortly; read the webhook again to see it."})
	return nil
}

// awaitEnabled polls the webhook until it is enabled with no failures, the
// wait ends, or the request is cancelled.
func (s *server) awaitEnabled(r *http.Request, wh furrow.Webhook) (furrow.Webhook, bool, error) {
	deadline := time.NewTimer(s.cfg.ReenableWait)
	defer deadline.Stop()
	tick := time.NewTicker(reenablePoll)
	defer tick.Stop()
	for {
		cur, err := s.Webhooks.Webhook(r.Context(), currentFarm(r), wh.ID)
		if err != nil {
			return wh, false, err
		}
		if cur.Enabled && cur.ConsecutiveFailures == 0 {
			return cur, true, nil
		}
		select {
		case <-deadline.C:
			return cur, false, nil
		case <-r.Context().Done():
			return cur, false, r.Context().Err()
		case <-tick.C:
		}
	}
}
