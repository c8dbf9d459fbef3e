package api

import (
	"net/http"

	"github.com/furrowhq/furrow"
)

// maxRedeliver bounds one redelivery request, so that a far-back since_ms
// cannot start an unbounded number of workflows. It is one page of the
// events list, which eventsSince reads.
const maxRedeliver = furrow.MaxListLimit

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
// or of every subscribed event since a time ({since_ms}): 202 {count}.
func (s *server) redeliver(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		EventID *string `json:"event_id"`
		SinceMs *int64  `json:"since_ms"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	if (in.EventID == nil) == (in.SinceMs == nil) {
		return furrow.Errorf(furrow.EINVALID, "Give exactly one of event_id and since_ms.")
	}
	wh, err := s.farmWebhook(r)
	if err != nil {
		return err
	}
	var events []furrow.Event
	if in.EventID != nil {
		events, err = s.oneEvent(r, wh, *in.EventID)
	} else {
		events, err = s.eventsSince(r, wh, *in.SinceMs)
	}
	if err != nil {
		return err
	}
	n := 0
	if len(events) > 0 {
		if n, err = s.Delivery.Redeliver(r.Context(), wh, events); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"count": n})
	return nil
}

// oneEvent loads an event of the farm that the webhook subscribes to.
func (s *server) oneEvent(r *http.Request, wh furrow.Webhook, id string) ([]furrow.Event, error) {
	if _, err := furrow.ParseEventID(id); err != nil {
		return nil, err
	}
	e, err := s.Events.Event(r.Context(), id)
	if furrow.ErrorCode(err) == furrow.ENOTFOUND || (err == nil && e.FarmID != currentFarm(r)) {
		return nil, furrow.Errorf(furrow.ENOTFOUND, "The event does not exist.")
	} else if err != nil {
		return nil, err
	}
	if !wh.Subscribes(e.Type) {
		return nil, furrow.Errorf(furrow.EINVALID, "The webhook does not subscribe to events of type %s.", e.Type)
	}
	return []furrow.Event{e}, nil
}

// eventsSince lists the farm's events since sinceMs that the webhook
// subscribes to, following the cursors, when at most maxRedeliver events
// occurred since then. More would leave the oldest unsent, so they are
// refused (EINVALID). A page ends at maxRedeliver events or, with large
// ones, sooner (furrow.MaxPageBytes); the events kept lose their data, so
// only the page being read holds any: a delivery's start needs none.
func (s *server) eventsSince(r *http.Request, wh furrow.Webhook, sinceMs int64) ([]furrow.Event, error) {
	if sinceMs < 0 {
		return nil, furrow.Errorf(furrow.EINVALID, "The field since_ms must not be negative.")
	}
	f := furrow.EventFilter{FarmID: currentFarm(r), SinceMs: &sinceMs}
	var kept []furrow.Event
	read := 0
	for f.Limit = maxRedeliver; ; f.Limit = maxRedeliver - read {
		page, next, err := s.Events.Events(r.Context(), f)
		if err != nil {
			return nil, err
		}
		read += len(page)
		for _, e := range page {
			if wh.Subscribes(e.Type) {
				e.Data = nil
				kept = append(kept, e)
			}
		}
		switch {
		case next == nil:
			return kept, nil
		case read >= maxRedeliver:
			return nil, furrow.Errorf(furrow.EINVALID, "More than %d events occurred since since_ms; choose a later since_ms.", maxRedeliver)
		}
		f.Before = next
	}
}
