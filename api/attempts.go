package api

import (
	"errors"
	"net/http"

	"github.com/furrowhq/furrow"
)

// listAttempts lists a webhook's delivery log newest first: 200. When more
// remain, the Furrow-Next-Cursor header holds the cursor of the next page.
func (s *server) listAttempts(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r)
	if err != nil {
		return err
	}
	before, err := queryCursor(r, attemptsList)
	if err != nil {
		return err
	}
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	attempts, next, err := s.Webhooks.Attempts(r.Context(), furrow.AttemptFilter{WebhookID: wh.ID, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	setNextCursor(w, attemptsList, next)
	writeJSON(w, http.StatusOK, nonNil(attempts))
	return nil
}

// redeliver starts new deliveries to the webhook of one event ({event_id})
// or of every subscribed event since a time ({since_ms}): 202 {count}. A
// disabled webhook is refused (409): its deliveries would all be skipped.
// Under an Idempotency-Key the redelivery is named by the webhook and the
// key, so that the request sent again starts nothing more; the key reused
// with another body is the control's ECONFLICT (409), which starts nothing.
func (s *server) redeliver(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		EventID *string `json:"event_id"`
		SinceMs *int64  `json:"since_ms"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	var eventID string
	switch {
	case (in.EventID == nil) == (in.SinceMs == nil):
		return furrow.Errorf(furrow.EINVALID, "Give exactly one of event_id and since_ms.")
	case in.SinceMs != nil && *in.SinceMs < 0:
		return furrow.Errorf(furrow.EINVALID, "The field since_ms must not be negative.")
	case in.EventID != nil:
		u, err := furrow.ParseEventID(*in.EventID)
		if err != nil {
			return furrow.Errorf(furrow.EINVALID, "The field event_id is malformed. %s", furrow.ErrorMessage(err))
		}
		// Either case names the event; stores know it by its lower-case id.
		eventID = furrow.EventID(u)
	}
	key, err := redeliveryKey(r)
	if err != nil {
		return err
	}
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	if !wh.Enabled {
		return furrow.Errorf(furrow.ECONFLICT, "The webhook is disabled; enable it first.")
	}
	n := 0
	if in.EventID != nil {
		n, err = s.redeliverEvent(r, wh, eventID, key)
	} else {
		n, err = s.redeliverSince(r, wh, *in.SinceMs, key)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"count": n})
	return nil
}

// redeliveryKey returns the request's Idempotency-Key, "" when it has none.
func redeliveryKey(r *http.Request) (string, error) {
	keys := r.Header.Values(idempotencyHeader)
	switch {
	case len(keys) == 0:
		return "", nil
	case len(keys) > 1 || !furrow.ValidIdempotencyKey(keys[0]):
		return "", furrow.Errorf(furrow.EINVALID,
			"The Idempotency-Key header must be given once, as 1 to %d printable ASCII characters.", furrow.MaxIdempotencyKey)
	}
	return keys[0], nil
}

// control returns the delivery engine's WebhookControl; without one
// (a test's stand-in engine) what needs it is an internal error.
func (s *server) control() (furrow.WebhookControl, error) {
	if s.Control == nil {
		return nil, errors.New("the delivery engine does not implement furrow.WebhookControl")
	}
	return s.Control, nil
}

// redeliverEvent starts a new delivery of the event id to wh, under key
// when it is not empty, and returns 1.
func (s *server) redeliverEvent(r *http.Request, wh furrow.Webhook, id, key string) (int, error) {
	e, err := s.oneEvent(r, wh, id)
	if err != nil {
		return 0, err
	}
	if key == "" {
		return s.Delivery.Redeliver(r.Context(), wh, []furrow.Event{e})
	}
	ctl, err := s.control()
	if err != nil {
		return 0, err
	}
	return 1, ctl.RedeliverOnce(r.Context(), wh, []furrow.Event{e}, key)
}

// redeliverSince starts the redelivery to wh of the events it subscribes
// to that occurred since sinceMs, and returns how many: the request only
// counts them (at most furrow.MaxRedeliverSince, else EINVALID) and fixes
// the set; the redelivery's workflow reads them a page at a time.
func (s *server) redeliverSince(r *http.Request, wh furrow.Webhook, sinceMs int64, key string) (int, error) {
	set, err := s.Webhooks.RedeliverySet(r.Context(), currentFarm(r), wh.SubscribedTypes(), sinceMs, furrow.MaxRedeliverSince)
	switch {
	case err != nil:
		return 0, err
	case set.Count > furrow.MaxRedeliverSince:
		return 0, furrow.Errorf(furrow.EINVALID, "More than %d events the webhook subscribes to occurred since since_ms; choose a later since_ms.", furrow.MaxRedeliverSince)
	case set.Count == 0:
		return 0, nil
	}
	ctl, err := s.control()
	if err != nil {
		return 0, err
	}
	return set.Count, ctl.RedeliverSince(r.Context(), wh, set, key)
}

// oneEvent loads an event of the farm that the webhook subscribes to.
func (s *server) oneEvent(r *http.Request, wh furrow.Webhook, id string) (furrow.Event, error) {
	e, err := s.Events.Event(r.Context(), id)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND || (err == nil && e.FarmID != currentFarm(r)) {
		return furrow.Event{}, furrow.Errorf(furrow.ENOTFOUND, "The event does not exist.")
	} else if err != nil {
		return furrow.Event{}, err
	}
	if !wh.Subscribes(e.Type) {
		return furrow.Event{}, furrow.Errorf(furrow.EINVALID, "The webhook does not subscribe to events of type %s.", e.Type)
	}
	return e, nil
}
