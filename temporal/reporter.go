package temporal

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/workflows"
)

// Reporter hands the end of delivery chains to the webhooks' workflows:
// the activities' ChainReporter, backed by Temporal.
type Reporter struct {
	c client.Client
}

var _ activities.ChainReporter = (*Reporter)(nil)

// NewReporter returns a Reporter using c.
func NewReporter(c client.Client) *Reporter { return &Reporter{c: c} }

// ReportChain sends r as SignalChain to the webhook's workflow, starting it
// when it does not run.
func (rp *Reporter) ReportChain(ctx context.Context, r furrow.ChainReport) error {
	return signalWebhook(ctx, rp.c, r.WebhookID, workflows.SignalChain, r)
}
