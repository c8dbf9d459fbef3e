package furrow_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
)

func TestSecrets(t *testing.T) {
	for _, c := range []struct {
		gen    func() string
		prefix string
		enc    *base64.Encoding
	}{
		{furrow.NewDeviceKey, furrow.DeviceKeyPrefix, base64.RawURLEncoding},
		{furrow.NewUserToken, furrow.UserTokenPrefix, base64.RawURLEncoding},
		{furrow.NewWebhookSecret, furrow.WebhookSecretPrefix, base64.StdEncoding},
	} {
		a, b := c.gen(), c.gen()
		rest, ok := strings.CutPrefix(a, c.prefix)
		raw, err := c.enc.DecodeString(rest)
		if !ok || err != nil || len(raw) != 32 {
			t.Errorf("%q: want %s and 32 bytes encoded (%v)", a, c.prefix, err)
		}
		if a == b || furrow.HashSecret(a) == furrow.HashSecret(b) {
			t.Errorf("two secrets or their hashes are equal: %q", a)
		}
	}
	if furrow.HashSecret("x") != furrow.HashSecret("x") {
		t.Error("HashSecret is not deterministic")
	}
}
