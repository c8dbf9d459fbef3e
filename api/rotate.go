package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/furrowhq/furrow"
)

// rotateSecret gives the webhook a new signing secret: 200 with the
// webhook and its new secret. The body {"overlap": "<duration>"} is
// optional; during the overlap the previous secret still signs (see
// furrow.Webhook.SigningSecrets).
func (s *server) rotateSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "webhook")
	if err != nil {
		return err
	}
	overlap, err := s.rotationOverlap(w, r)
	if err != nil {
		return err
	}
	wh, err := s.Webhooks.RotateWebhookSecret(r.Context(), currentFarm(r), id, furrow.NewWebhookSecret(), overlap)
	if err != nil {
		return err
	}
	s.Metrics.SecretRotated()
	s.Logger.InfoContext(r.Context(), "webhook secret rotated", "request_id", RequestID(r.Context()),
		"webhook_id", wh.ID, "secret_version", wh.SecretVersion, "overlap", furrow.Duration(overlap).String())
	out, err := s.oneWithHealth(r, wh)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// rotationOverlap reads the optional body of a rotation: no body, an empty
// object or a null overlap ask for furrow.DefaultSecretOverlap.
func (s *server) rotationOverlap(w http.ResponseWriter, r *http.Request) (time.Duration, error) {
	b, err := s.readBody(w, r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return furrow.DefaultSecretOverlap, err
	}
	var in struct {
		Overlap *string `json:"overlap"`
	}
	if err := decodeJSON(b, &in); err != nil {
		return 0, err
	}
	if in.Overlap == nil {
		return furrow.DefaultSecretOverlap, nil
	}
	return furrow.ParseSecretOverlap(*in.Overlap)
}
