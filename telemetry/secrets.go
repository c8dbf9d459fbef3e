package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the state label of furrow_webhook_secrets.
const (
	SecretSealed   = "sealed"
	SecretUnsealed = "unsealed"
)

// SecretStates counts the stored webhook signing secrets that are sealed
// at rest and those that are not.
type SecretStates interface {
	WebhookSecretStates(ctx context.Context) (sealed, unsealed int64, err error)
}

// secretsRefresh is how long one count of the secrets is served: the count
// reads the whole webhooks table, which every replica need not do at each
// scrape.
const secretsRefresh = time.Minute

// WatchSecrets exports furrow_webhook_secrets{state}, the stored webhook
// secrets by state, counted through s at most once a minute, and
// furrow_webhook_secrets_sealing, 1 when this process seals the secrets it
// stores and 0 when it stores them unsealed. A failed count is logged and
// leaves the counts out of that scrape.
func (m *Metrics) WatchSecrets(s SecretStates, sealing bool, log *slog.Logger) {
	if m == nil {
		return
	}
	on := 0.0
	if sealing {
		on = 1
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "furrow_webhook_secrets_sealing",
			Help: "1 when this process seals the webhook secrets it stores (a key ring is set), 0 when it stores them unsealed.",
		}, func() float64 { return on }),
		&secretsCollector{s: s, log: log, desc: prometheus.NewDesc("furrow_webhook_secrets",
			"Stored webhook signing secrets by state: sealed at rest, or unsealed.", []string{"state"}, nil)},
	)
}

type secretsCollector struct {
	s    SecretStates
	log  *slog.Logger
	desc *prometheus.Desc

	mu               sync.Mutex
	at               time.Time
	sealed, unsealed int64
}

func (c *secretsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *secretsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= secretsRefresh {
		ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
		defer cancel()
		sealed, unsealed, err := c.s.WebhookSecretStates(ctx)
		if err != nil {
			if c.log != nil {
				c.log.Warn("metrics: counting the webhook secrets failed", "err", err)
			}
			return
		}
		c.at, c.sealed, c.unsealed = time.Now(), sealed, unsealed
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.sealed), SecretSealed)
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.unsealed), SecretUnsealed)
}
