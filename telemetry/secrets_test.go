package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

type secretStates struct {
	sealed, unsealed int64
	err              error
	calls            atomic.Int32
}

func (s *secretStates) WebhookSecretStates(context.Context) (int64, int64, error) {
	s.calls.Add(1)
	return s.sealed, s.unsealed, s.err
}

func TestSecretGauges(t *testing.T) {
	m := New()
	s := &secretStates{sealed: 7, unsealed: 2}
	m.WatchSecrets(s, true, nil)
	body := scrape(t, m)
	for line, want := range map[string]bool{
		`furrow_webhook_secrets{state="sealed"} 7`:   true,
		`furrow_webhook_secrets{state="unsealed"} 2`: true,
		"furrow_webhook_secrets_sealing 1":           true,
	} {
		if strings.Contains(body, line+"\n") != want {
			t.Errorf("want %q in:\n%s", line, grep(body, "furrow_webhook_secrets"))
		}
	}
	scrape(t, m)
	if n := s.calls.Load(); n != 1 {
		t.Errorf("two scrapes within a minute counted %d times, want once", n)
	}

	plain := New()
	plain.WatchSecrets(&secretStates{unsealed: 3}, false, nil)
	if v := value(t, scrape(t, plain), "furrow_webhook_secrets_sealing"); v != 0 {
		t.Errorf("sealing without a key ring = %v, want 0", v)
	}

	broken := New()
	broken.WatchSecrets(&secretStates{err: errors.New("down")}, true, nil)
	if body := scrape(t, broken); strings.Contains(body, "furrow_webhook_secrets{") {
		t.Errorf("a failed count must leave the counts out, got:\n%s", grep(body, "furrow_webhook_secrets"))
	}
}
