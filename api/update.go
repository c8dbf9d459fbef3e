package api

import (
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/safehttp"
)

// nullable is a field of a PATCH body: absent (set false), null (set, v
// nil) or a value, so that null can mean something of its own.
type nullable[T any] struct {
	set bool
	v   *T
}

// UnmarshalJSONFrom is called for a present field, null included. It
// reads the value from decodeJSON's own decoder, so that its rules and
// the field's place in errors hold inside the field too.
func (n *nullable[T]) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	n.set = true
	return json.UnmarshalDecode(dec, &n.v)
}

// updateWebhook changes a webhook's url, event types or delivery rate:
// 200 with the webhook. Fields left out stay as they are; null sets a
// field back to its default (event_types: the default types;
// max_per_second: unlimited), and url cannot be null.
func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		URL          nullable[string]   `json:"url"`
		EventTypes   nullable[[]string] `json:"event_types"`
		MaxPerSecond nullable[float64]  `json:"max_per_second"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	p := furrow.WebhookPatch{URL: in.URL.v, SetMaxPerSecond: in.MaxPerSecond.set, MaxPerSecond: in.MaxPerSecond.v}
	if in.URL.set && in.URL.v == nil {
		return furrow.Errorf(furrow.EINVALID, "The field url cannot be null: a webhook always has an endpoint.")
	}
	if in.URL.v != nil {
		if err := safehttp.ValidateURL(*in.URL.v, s.cfg.AllowPrivateWebhooks); err != nil {
			return err
		}
	}
	if in.EventTypes.set {
		var listed []string
		if in.EventTypes.v != nil {
			listed = *in.EventTypes.v
		}
		types, err := eventTypes(listed)
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
