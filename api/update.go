package api

import (
	"encoding/json"
	"net/http"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/safehttp"
)

// optionalRate is the max_per_second field of a PATCH: absent, null
// (unlimited) or a number.
type optionalRate struct {
	set bool
	v   *float64
}

// UnmarshalJSON is called for a present field, null included.
func (o *optionalRate) UnmarshalJSON(b []byte) error {
	o.set = true
	if err := json.Unmarshal(b, &o.v); err != nil {
		return furrow.Errorf(furrow.EINVALID, "The field max_per_second must be a number or null.")
	}
	return nil
}

// updateWebhook changes a webhook's url, event types or delivery rate:
// 200 with the webhook. Fields left out stay as they are; max_per_second
// null makes the rate unlimited.
func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		URL          *string      `json:"url"`
		EventTypes   *[]string    `json:"event_types"`
		MaxPerSecond optionalRate `json:"max_per_second"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	p := furrow.WebhookPatch{URL: in.URL, SetMaxPerSecond: in.MaxPerSecond.set, MaxPerSecond: in.MaxPerSecond.v}
	if in.URL != nil {
		if err := safehttp.ValidateURL(*in.URL, s.cfg.AllowPrivateWebhooks); err != nil {
			return err
		}
	}
	if in.EventTypes != nil {
		types, err := eventTypes(*in.EventTypes)
		if err != nil {
			return err
		}
		p.EventTypes = types
	}
	if err := furrow.ValidateMaxPerSecond(p.MaxPerSecond); err != nil {
		return err
	}
	id, err := pathID(r, "webhook")
	if err != nil {
		return err
	}
	wh, err := s.Webhooks.UpdateWebhook(r.Context(), currentFarm(r), id, p)
	if err != nil {
		return err
	}
	return s.answerWebhook(w, r, wh)
}
