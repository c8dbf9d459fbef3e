package api

import (
	"net/http"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// webhookView is a webhook as the API answers it: with its health at a
// glance.
type webhookView struct {
	furrow.Webhook
	Health furrow.WebhookHealth `json:"health"`
}

// newWebhookView is the view of a webhook that has no attempts yet.
func newWebhookView(w furrow.Webhook) webhookView {
	return webhookView{webhookOut(w), furrow.AttemptHealth{}.Health(w)}
}

// withHealth reads the health of hooks with one store call, however many
// they are.
func (s *server) withHealth(r *http.Request, hooks []furrow.Webhook) ([]webhookView, error) {
	ids := make([]uuid.UUID, 0, len(hooks))
	for _, h := range hooks {
		ids = append(ids, h.ID)
	}
	hs, err := s.Webhooks.AttemptHealth(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make([]webhookView, 0, len(hooks))
	for i, h := range hooks {
		v := newWebhookView(h)
		if i < len(hs) && hs[i].WebhookID == h.ID {
			v.Health = hs[i].Health(h)
		}
		out = append(out, v)
	}
	return out, nil
}

// answerWebhook answers 200 with wh and its health.
func (s *server) answerWebhook(w http.ResponseWriter, r *http.Request, wh furrow.Webhook) error {
	out, err := s.oneWithHealth(r, wh)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// oneWithHealth is withHealth of one webhook.
func (s *server) oneWithHealth(r *http.Request, wh furrow.Webhook) (webhookView, error) {
	vs, err := s.withHealth(r, []furrow.Webhook{wh})
	if err != nil {
		return webhookView{}, err
	}
	return vs[0], nil
}
