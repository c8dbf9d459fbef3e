package workflows

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// The texts below are what operators read in the Temporal UI and CLI: the
// delivery's summary and details, its activities' and timers' summaries,
// and its current details.

// deliverySummary is the one-line summary of the delivery of e to the
// webhook at host.
func deliverySummary(host string, e furrow.Event) string {
	return fmt.Sprintf("%s to %s, farm %s, %s", e.Type, host, e.FarmID, eventTime(e))
}

// deliveryDetails are the fixed details of a delivery, in Temporal
// markdown.
func deliveryDetails(webhookID uuid.UUID, host string, e furrow.Event, schedule []time.Duration) string {
	schedule = furrow.ScheduleOrDefault(schedule)
	delays := make([]string, len(schedule))
	for i, d := range schedule {
		delays[i] = furrow.Duration(d).String()
	}
	return fmt.Sprintf("**Event** `%s` of type `%s`, at %s\n\n**Farm** `%s`\n\n**Webhook** `%s` at host `%s`"+
		" (state: `temporal workflow query --workflow-id %s --type %s`)\n\n**Retry delays** %s (%d attempts at most)",
		e.ID, e.Type, eventTime(e), e.FarmID, webhookID, host, WebhookWorkflowID(webhookID), QueryState,
		strings.Join(delays, ", "), len(schedule)+1)
}

// webhookHost is the host (and port) of a webhook's address: never its
// path, query or user information, where secrets may hide.
func webhookHost(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "an invalid address"
	}
	return u.Host
}

func eventTime(e furrow.Event) string {
	return time.UnixMilli(e.OccurredAtMs).UTC().Format(time.RFC3339)
}

func (c *chain) attemptSummary(n int) string {
	return fmt.Sprintf("attempt %d of %d", n, c.total())
}

func (c *chain) lostSummary(n int) string {
	return fmt.Sprintf("record attempt %d of %d as lost", n, c.total())
}

func (c *chain) retriedSummary() string {
	return fmt.Sprintf("attempts 2 to %d of %d, retried by Temporal", c.total(), c.total())
}

func (c *chain) waitSummary(n int, delay time.Duration) string {
	return fmt.Sprintf("wait %s before attempt %d of %d", furrow.Duration(delay), n, c.total())
}

func (c *chain) sending(n int) string {
	return fmt.Sprintf("sending attempt %d of %d", n, c.total())
}

func (c *chain) sendingRetried() string {
	return fmt.Sprintf("sending attempts 2 to %d of %d; the pending activity shows the attempt and its last failure", c.total(), c.total())
}

// throttled says that attempt n waits for the webhook's rate: "waiting
// for the webhook's rate of 5/s: attempt 1 of 8 in 3s".
func (c *chain) throttled(n int, rate float64, wait time.Duration) string {
	return fmt.Sprintf("waiting for the webhook's rate of %s: attempt %d of %d in %s", furrow.RateText(rate), n, c.total(), furrow.Duration(wait))
}

func (c *chain) throttledSummary(n int, rate float64) string {
	return fmt.Sprintf("wait for the webhook's rate of %s before attempt %d of %d", furrow.RateText(rate), n, c.total())
}

// waiting says that attempt n failed and when the next comes: "attempt 3
// of 8 answered 503; next in 10m".
func (c *chain) waiting(n int, f failure, delay time.Duration) string {
	return fmt.Sprintf("attempt %d of %d %s; next in %s", n, c.total(), answer(f.status, f.text), furrow.Duration(delay))
}

// ended says how the chain ended.
func (c *chain) ended(out DeliveryResult) string {
	switch {
	case out.Outcome == furrow.OutcomeDelivered:
		return fmt.Sprintf("delivered: attempt %d of %d answered %d", out.Attempts, c.total(), out.StatusCode)
	case out.Outcome == furrow.OutcomeSkipped:
		return fmt.Sprintf("skipped at attempt %d of %d: %s", out.Attempts, c.total(), out.Error)
	case out.Attempts < c.total():
		return fmt.Sprintf("failed: attempt %d of %d %s, which is not retried", out.Attempts, c.total(), answer(out.StatusCode, out.Error))
	}
	return fmt.Sprintf("failed: attempt %d of %d %s; no attempt left", out.Attempts, c.total(), answer(out.StatusCode, out.Error))
}

// failedMessage is the message of a failed chain's workflow error: "attempt
// 8 of 8 answered 503", "attempt 1 of 8 answered 404, not retried",
// "attempt 3 of 3 failed (connection failed: …)".
func (c *chain) failedMessage(out DeliveryResult) string {
	msg := fmt.Sprintf("attempt %d of %d %s", out.Attempts, c.total(), answer(out.StatusCode, out.Error))
	if out.Attempts < c.total() {
		msg += ", not retried"
	}
	return msg
}

// answer is "answered 503", or "failed (why)" when there was no answer.
func answer(status int, text string) string {
	if status != 0 {
		return fmt.Sprintf("answered %d", status)
	}
	return fmt.Sprintf("failed (%s)", text)
}
