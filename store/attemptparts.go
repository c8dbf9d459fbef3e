package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow"
)

// AttemptParts reads the webhook and the event of one delivery attempt.
// Both statements go to the database in one batch, so an attempt's reads
// cost one round trip and one transaction instead of two: a read's round
// trip costs both processes more than its work. An event missing from the
// partition its id names is looked for everywhere after, as Event does.
func (db *DB) AttemptParts(ctx context.Context, webhookID uuid.UUID, eventID string, test bool) (furrow.AttemptParts, error) {
	var p furrow.AttemptParts
	u, err := furrow.ParseEventID(eventID)
	if err != nil {
		return p, err
	}
	eq, named := testEventSQL, false
	if !test {
		eq, named = db.eventSQL(u)
	}
	b := &pgx.Batch{}
	b.Queue(webhookByIDSQL, webhookID)
	b.Queue(eq, u)
	br := db.pool.SendBatch(ctx, b)
	w, expired, werr := db.scanWebhook(br.QueryRow())
	e, eerr := scanEvent(br.QueryRow())
	// A failed statement ends the batch; the errors read above say which.
	_ = br.Close()
	if named && eerr != nil && ctx.Err() == nil {
		// A partition that is not there fails the whole batch, whose
		// statements are all prepared before any runs.
		if werr != nil && !errors.Is(werr, pgx.ErrNoRows) {
			w, expired, werr = db.scanWebhook(db.pool.QueryRow(ctx, webhookByIDSQL, webhookID))
		}
		e, eerr = scanEvent(db.pool.QueryRow(ctx, eventAnywhereSQL, u))
	}
	if werr != nil && !errors.Is(werr, pgx.ErrNoRows) {
		return p, translate(werr, "webhook", "webhook")
	}
	if eerr != nil && !errors.Is(eerr, pgx.ErrNoRows) {
		return p, translate(eerr, "event", "event")
	}
	if expired {
		db.clearExpired(ctx, []uuid.UUID{w.ID})
	}
	if werr == nil {
		p.Webhook, p.WebhookFound = w, true
	}
	if eerr == nil {
		p.Event, p.EventFound = e, true
	}
	return p, nil
}
