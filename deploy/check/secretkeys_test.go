package check

import (
	"encoding/base64"
	"strings"
	"testing"
)

// checkSecretKeys: serve and worker take FURROW_SECRET_KEYS from a Secret;
// with the default values that Secret is the chart's own, rendered with a
// one-key ring of exactly 32 bytes and kept when the release goes; with an
// existing Secret named, the chart renders none and references it. No other
// Secret is ever rendered: the others are referenced, never inlined.
func checkSecretKeys(t *testing.T, c rendered, file string) {
	t.Helper()
	vals := values(t, file)
	wantName, wantKey := "furrow-secret-keys", "secret-keys"
	if sk, ok := vals["secretKeys"].(map[string]any); ok && sk["existingSecret"] != "" {
		wantName, wantKey = sk["existingSecret"].(string), sk["key"].(string)
	}
	for _, component := range []string{"serve", "worker"} {
		var found bool
		for _, e := range container(t, c.deployments[component].Spec.Template.Spec, component).Env {
			if e.Name != "FURROW_SECRET_KEYS" {
				continue
			}
			found = true
			if ref := e.ValueFrom; e.Value != "" || ref == nil || ref.SecretKeyRef == nil ||
				ref.SecretKeyRef.Name != wantName || ref.SecretKeyRef.Key != wantKey {
				t.Errorf("%s: FURROW_SECRET_KEYS is not taken from Secret %s key %s: %+v", component, wantName, wantKey, e)
			}
		}
		if !found {
			t.Errorf("%s: FURROW_SECRET_KEYS is not set: webhook secrets would be stored unsealed", component)
		}
	}
	if wantName != "furrow-secret-keys" {
		if len(c.secrets) != 0 {
			t.Errorf("with an existing key ring Secret the chart still renders %d Secrets", len(c.secrets))
		}
		return
	}
	if len(c.secrets) != 1 || c.secrets[0].Name != wantName {
		t.Fatalf("want the chart's key ring Secret %s alone, got %d Secrets", wantName, len(c.secrets))
	}
	s := c.secrets[0]
	if s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("the key ring Secret is not kept when the release is deleted: %v", s.Annotations)
	}
	if len(s.Data) != 1 {
		t.Errorf("the key ring Secret holds %d values, want the ring alone", len(s.Data))
	}
	ring := string(s.Data[wantKey])
	id, key, ok := strings.Cut(ring, ":")
	raw, err := base64.StdEncoding.DecodeString(key)
	if !ok || id == "" || strings.Contains(key, ",") || err != nil || len(raw) != 32 {
		t.Errorf("the generated ring is not one id:base64key of 32 bytes (id %q, %d bytes, %v)", id, len(raw), err)
	}
}
