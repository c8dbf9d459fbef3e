package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// sentRows is the predicate of the delivery_attempts_sent index (migration
// 0015): the rows of attempts that sent something. The health query states
// it word for word so that the planner uses that index.
const sentRows = "a.error NOT LIKE '" + furrow.SkipPrefix + "%'"

// healthSQL summarizes each webhook of $1 since $2 (ms) with index range
// scans of delivery_attempts_sent, one set per webhook: the window's count,
// successes and duration percentiles (index only), then the newest 2xx
// and the newest other attempt, each the first match of a backward scan.
var healthSQL = `SELECT w.id, s.n, s.ok, s.p50, s.p95, d.at_ms, f.at_ms, f.status_code, f.error
	FROM unnest($1::uuid[]) WITH ORDINALITY AS w(id, ord)
	CROSS JOIN LATERAL (
		SELECT count(*) AS n, count(*) FILTER (WHERE a.status_code BETWEEN 200 AND 299) AS ok,
			percentile_disc(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS p50,
			percentile_disc(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95
		FROM delivery_attempts a WHERE a.webhook_id = w.id AND a.at_ms >= $2 AND ` + sentRows + `) s
	LEFT JOIN LATERAL (
		SELECT a.at_ms FROM delivery_attempts a
		WHERE a.webhook_id = w.id AND a.status_code BETWEEN 200 AND 299 AND ` + sentRows + `
		ORDER BY a.at_ms DESC LIMIT 1) d ON true
	LEFT JOIN LATERAL (
		SELECT a.at_ms, a.status_code, a.error FROM delivery_attempts a
		WHERE a.webhook_id = w.id AND a.status_code NOT BETWEEN 200 AND 299 AND ` + sentRows + `
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
