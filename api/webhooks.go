package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/safehttp"
	"github.com/google/uuid"
)

// reenablePoll is how often enabling waits to see the workflow's change.
const reenablePoll = 50 * time.Millisecond

// deletedSignalWait bounds the signal that ends a deleted webhook's
// workflow, so that a slow or unreachable Temporal delays the delete's
// answer by at most this. The workflow also finds its webhook gone on its
// own, within a day (workflows.goneCheckEvery).
const deletedSignalWait = time.Second

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
	return s.answerWebhook(w, r, wh)
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
	s.endWorkflow(r, id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// endWorkflow tells the workflow of the webhook id, just deleted, to end,
// within deletedSignalWait. The delete has committed: a signal that fails
// is logged, not answered.
func (s *server) endWorkflow(r *http.Request, id uuid.UUID) {
	if s.Control == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), deletedSignalWait)
	defer cancel()
	if err := s.Control.WebhookDeleted(ctx, id); err != nil {
		s.Logger.WarnContext(r.Context(), "webhook deleted, but its workflow was not told; it ends on its own within a day",
			"request_id", RequestID(r.Context()), "webhook_id", id, "error", err)
	}
}

// enableWebhook signals the webhook's workflow to re-enable it and waits
// for the change (awaitEnabled): 200 with the enabled webhook, or 202 with
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

// answerReserve is the part of a request's time that enabling keeps for
// its last reads (the webhook and its health) and the answer: its wait ends
// that long before the request's deadline, however long the signal took,
// so that a slow workflow is answered 202 rather than a timed-out 500.
func (s *server) answerReserve() time.Duration { return s.cfg.RequestTimeout / 5 }

// awaitEnabled polls the webhook, before as it was read before the signal,
// until the workflow re-enabled it (reenabled), for at most ReenableWait
// and no later than answerReserve before the request's deadline. It
// returns the webhook as last read and whether the change is applied.
func (s *server) awaitEnabled(r *http.Request, before furrow.Webhook) (furrow.Webhook, bool, error) {
	end := time.Now().Add(s.cfg.ReenableWait)
	if d, ok := r.Context().Deadline(); ok && d.Add(-s.answerReserve()).Before(end) {
		end = d.Add(-s.answerReserve())
	}
	wait := time.NewTimer(time.Until(end))
	defer wait.Stop()
	tick := time.NewTicker(reenablePoll)
	defer tick.Stop()
poll:
	for time.Now().Before(end) {
		cur, err := s.Webhooks.Webhook(r.Context(), currentFarm(r), before.ID)
		if err != nil {
			return before, false, err
		}
		if reenabled(before, cur) {
			return cur, true, nil
		}
		select {
		case <-tick.C:
		case <-wait.C:
			break poll
		case <-r.Context().Done():
			break poll
		}
	}
	// The wait ran out: a last read within the deadline says where the
	// change stands.
	cur, err := s.Webhooks.Webhook(r.Context(), currentFarm(r), before.ID)
	if err != nil {
		return before, false, err
	}
	return cur, reenabled(before, cur), nil
}

// reenabled reports whether cur, the webhook read after the reenable
// signal, shows the signal applied to before, as read before it: a
// transition came since to a webhook that was disabled (its next
// transition is its re-enabling, so a failure right after it cannot hide
// it), or it is enabled and came through a transition since or has no
// failures (a webhook that was enabled, whose counter the signal resets
// without a transition, or one re-enabled by a workflow that predates
// transitions). An enabled webhook's next transition can be its disabling,
// by a failed chain the workflow applies before the signal: that alone is
// not the change.
func reenabled(before, cur furrow.Webhook) bool {
	moved := cur.StateSeq > before.StateSeq
	return (moved && !before.Enabled) || (cur.Enabled && (moved || cur.ConsecutiveFailures == 0))
}
