package furrow

import (
	"slices"
	"testing"
	"time"
)

func TestParseSecretOverlap(t *testing.T) {
	for text, want := range map[string]time.Duration{"0s": 0, "90m": 90 * time.Minute, "24h": DefaultSecretOverlap, "168h": MaxSecretOverlap} {
		if got, err := ParseSecretOverlap(text); err != nil || got != want {
			t.Errorf("%q: %s, %v; want %s", text, got, err, want)
		}
	}
	for _, text := range []string{"", "168h0m1s", "-1s", "1d", "24", "soon"} {
		_, err := ParseSecretOverlap(text)
		if ErrorCode(err) != EINVALID || ErrorMessage(err) != `The field overlap must be a duration such as "24h" or "90m", from 0s to 168h.` {
			t.Errorf("%q: %v, want the bad_request that says what is accepted", text, err)
		}
	}
}

func TestSigningSecrets(t *testing.T) {
	until := time.UnixMilli(1_750_000_000_000)
	w := Webhook{Secret: "whsec_new", SecretVersion: 3, PreviousSecret: "whsec_old", PreviousSecretUntilMs: Millis(until)}
	during := w.SigningSecrets(until.Add(-time.Millisecond))
	if !slices.Equal(Versions(during), []int{2, 3}) || during[0].Secret != "whsec_old" || during[1].Secret != "whsec_new" {
		t.Fatalf("during the overlap: %+v, want the previous secret (version 2) first", during)
	}
	for _, s := range [][]SigningSecret{w.SigningSecrets(until), Webhook{Secret: "whsec_new", SecretVersion: 3}.SigningSecrets(until.Add(-time.Hour))} {
		if len(s) != 1 || s[0] != (SigningSecret{Version: 3, Secret: "whsec_new"}) {
			t.Fatalf("after the overlap or without one: %+v, want the current secret alone", s)
		}
	}
}
