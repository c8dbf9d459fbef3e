package store

import (
	"context"
	"math"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// The delivery log's index of outcomes (migration 0018): the attempts that
// sent something (sentRows; skipped ones' error starts with "skipped: "),
// by webhook, outcome (deliveredClass: 1 for a 2xx, 0 otherwise) and time,
// with the status and duration the health summary reads. The newest
// delivery and the newest failure of a webhook are then each the first
// entry of a backward range scan, however long the other outcome's run:
// with the outcome after the time instead, a webhook that never failed
// had its whole 30 days read to find no failure. The health query states
// the expressions word for word so that the planner uses the index.
const (
	sentRows       = "error NOT LIKE '" + furrow.SkipPrefix + "%'"
	deliveredClass = "(status_code BETWEEN 200 AND 299)::int"
)

var outcomeIndex = partitionIndex{
	migration: "0018", table: "delivery_attempts", name: "delivery_attempts_outcome", suffix: "_outcome",
	def:      "(webhook_id, (" + deliveredClass + "), at_ms) INCLUDE (status_code, duration_ms) WHERE " + sentRows,
	replaces: "delivery_attempts_sent",
}

// healthSQL summarizes each webhook of $1 since $2 (ms) with range scans
// of delivery_attempts_outcome, one set per webhook: the window's count,
// successes and duration percentiles (index only, one range per outcome),
// then the newest 2xx and the newest other attempt.
var healthSQL = `SELECT w.id, s.n, s.ok, s.p50, s.p95, d.at_ms, f.at_ms, f.status_code, f.error
	FROM unnest($1::uuid[]) WITH ORDINALITY AS w(id, ord)
	CROSS JOIN LATERAL (
		SELECT count(*) AS n, count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299) AS ok,
			percentile_disc(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS p50,
			percentile_disc(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95
		FROM delivery_attempts a
		WHERE a.webhook_id = w.id AND ` + deliveredClass + ` = ANY('{0,1}') AND a.at_ms >= $2 AND ` + sentRows + `) s
	LEFT JOIN LATERAL (
		SELECT a.at_ms FROM delivery_attempts a
		WHERE a.webhook_id = w.id AND ` + deliveredClass + ` = 1 AND ` + sentRows + `
		ORDER BY a.at_ms DESC LIMIT 1) d ON true
	LEFT JOIN LATERAL (
		SELECT a.at_ms, a.status_code, a.error FROM delivery_attempts a
		WHERE a.webhook_id = w.id AND ` + deliveredClass + ` = 0 AND ` + sentRows + `
		ORDER BY a.at_ms DESC LIMIT 1) f ON true
	ORDER BY w.ord`

// AttemptHealth summarizes the attempt log of each webhook, in the order
// given, in one query.
func (db *DB) AttemptHealth(ctx context.Context, webhookIDs []uuid.UUID) ([]furrow.AttemptHealth, error) {
	if len(webhookIDs) == 0 {
		return nil, nil
	}
	since := db.nowMs() - furrow.HealthWindow.Milliseconds()
	rows, _ := db.pool.Query(ctx, healthSQL, webhookIDs, since)
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (furrow.AttemptHealth, error) {
		var h furrow.AttemptHealth
		var failAt *int64
		var failStatus *int
		var failErr *string
		err := r.Scan(&h.WebhookID, &h.Attempts, &h.Delivered, &h.P50DurationMs, &h.P95DurationMs,
			&h.LastDeliveredAtMs, &failAt, &failStatus, &failErr)
		if failAt != nil {
			h.LastFailure = &furrow.HealthFailure{AtMs: *failAt, StatusCode: *failStatus, Error: *failErr}
		}
		return h, err
	})
	if err != nil {
		return nil, translate(err, "webhook health", "webhook")
	}
	return hs, nil
}

// deliveredIn is the condition "an attempt of webhook $1 answered 2xx,
// no test delivery's, began after lo (ms) and, when hi is given, before
// hi". The range of delivery_attempts_outcome (webhook, outcome 1, at_ms
// in the bounds) is read until its first row whose event is no test
// event, with a heap fetch (event_id is not in the index) and a probe of
// webhook_test_events' key per row: more than one row only when test
// deliveries come first, and a webhook has few (10 a minute at most). The
// probe is a scalar subquery, run per row: as a NOT EXISTS the planner
// made it an anti join that, over a long range, hashed every test event.
//
// A test delivery is never reported to the webhook's workflow, so it must
// not end a failed chain's count either (docs/webhooks.md). Its row is
// known by its event: test events live in webhook_test_events, which
// retention empties with the attempts (the attempts' partitions may
// outlive their test event by under a day, far older than any chain
// asked about here).
//
// Two clocks meet here: at_ms is the worker's when the POST began, the
// bounds the workflow's (Temporal's) when failed chains ended. Their skew
// decides only for a delivery that began within it of a chain's end.
func deliveredIn(lo, hi string) string {
	bounds := " AND a.at_ms > " + lo
	if hi != "" {
		bounds += " AND a.at_ms < " + hi
	}
	return `EXISTS (SELECT 1 FROM delivery_attempts a
	WHERE a.webhook_id = $1 AND ` + deliveredClass + ` = 1 AND ` + sentRows + bounds + `
		AND (SELECT NOT EXISTS (SELECT 1 FROM webhook_test_events t WHERE t.id = a.event_id)))`
}

// deliveredAfterSQL guards a failed chain's state write: was webhook $1
// delivered to by an attempt that began after $2 (ms)?
var deliveredAfterSQL = "SELECT " + deliveredIn("$2", "")

// deliveredBetweenSQL is DeliveredBetween's statement: for each pair of
// bounds of $2 and $3 (ms), in order, was webhook $1 delivered to by an
// attempt that began between them? Each pair is one probe of the index.
var deliveredBetweenSQL = `SELECT (SELECT ` + deliveredIn("g.lo", "g.hi") + `)
	FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS g(lo, hi, n) ORDER BY g.n`

// DeliveredBetween implements furrow.WebhookService (deliveredBetweenSQL):
// the bounds of the last end are it and the largest time there is.
func (db *DB) DeliveredBetween(ctx context.Context, webhookID uuid.UUID, endsMs []int64) ([]bool, error) {
	if len(endsMs) == 0 {
		return nil, nil
	}
	his := append(slices.Clone(endsMs[1:]), math.MaxInt64)
	rows, _ := db.pool.Query(ctx, deliveredBetweenSQL, webhookID, endsMs, his)
	found, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return nil, translate(err, "find deliveries", "webhook")
	}
	return found, nil
}
