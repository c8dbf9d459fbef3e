package api

import (
	"encoding/json"
	"net/http"

	"github.com/furrowhq/furrow"
)

// createEvent stores an app-emitted event, wakes the dispatcher and
// publishes the event on the live bus: 201 with the envelope. Only trigger.fired and recommendation.created are accepted,
// with a JSON object as data.
func (s *server) createEvent(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	e, err := furrow.NewAppEvent(in.Type, currentFarm(r), in.Data)
	if err != nil {
		return err
	}
	stored, err := s.Events.CreateEvent(r.Context(), e)
	if err != nil {
		return err
	}
	if s.Waker != nil && stored.Pending {
		s.Waker.Wake(stored.FarmID)
	}
	if s.EventPublisher != nil {
		s.EventPublisher.PublishEvent(stored.Event)
	}
	writeJSON(w, http.StatusCreated, stored.Event)
	return nil
}

// listEvents lists the farm's events newest first, filtered by ?type= and
// ?since_ms=: 200. When more remain, the Furrow-Next-Cursor header holds
// the cursor of the next page.
func (s *server) listEvents(w http.ResponseWriter, r *http.Request) error {
	f, err := eventFilter(r)
	if err != nil {
		return err
	}
	events, next, err := s.Events.Events(r.Context(), f)
	if err != nil {
		return err
	}
	setNextCursor(w, eventsList, next)
	writeJSON(w, http.StatusOK, nonNil(events))
	return nil
}

// eventFilter reads the query of the events list; malformed is EINVALID.
func eventFilter(r *http.Request) (furrow.EventFilter, error) {
	f := furrow.EventFilter{FarmID: currentFarm(r), Type: r.URL.Query().Get("type")}
	if f.Type != "" && !furrow.IsEventType(f.Type) {
		return f, furrow.Errorf(furrow.EINVALID, "The query parameter type must be one of the event types.")
	}
	var err error
	if f.SinceMs, err = querySinceMs(r); err != nil {
		return f, err
	}
	if f.Limit, err = queryLimit(r); err != nil {
		return f, err
	}
	f.Before, err = queryCursor(r, eventsList)
	return f, err
}

// nonNil makes empty lists encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
