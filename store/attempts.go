package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/furrowhq/furrow"
)

// AddAttempt appends a to the delivery log. The response body is cut to
// furrow.MaxResponseBody bytes and Error to furrow.MaxAttemptError, both
// made storable text. A zero
// AtMs is the clock's now and a nil DeliveryID a new one. The day's
// partition is created when missing. A malformed EventID is EINVALID; a row
// with the DeliveryID, WebhookID and AtMs of one already stored is
// ECONFLICT.
func (db *DB) AddAttempt(ctx context.Context, a furrow.Attempt) error {
	_, err := db.addAttempt(ctx, a, false)
	return err
}

// AddDeliveredAttempt is AddAttempt that, for a 2xx row, also returns the
// webhook's consecutive_failures as it is when the row goes in (0 when the
// webhook is gone), read by the insert's statement (countedAttemptSQL).
// Any other row is only added: only a delivery restarts the count. The
// read costs a 2xx row a key lookup and a row lock of the webhook, which
// marks its tuple (a multixact when deliveries to it overlap).
func (db *DB) AddDeliveredAttempt(ctx context.Context, a furrow.Attempt) (int, error) {
	return db.addAttempt(ctx, a, furrow.Accepted(a.StatusCode))
}

// addAttempt is AddAttempt, reading the webhook's failure counter too when
// counted.
func (db *DB) addAttempt(ctx context.Context, a furrow.Attempt, counted bool) (int, error) {
	eventID, err := furrow.ParseEventID(a.EventID)
	if err != nil {
		return 0, err
	}
	if a.AtMs == 0 {
		a.AtMs = db.nowMs()
	}
	if a.DeliveryID == uuid.Nil {
		a.DeliveryID = uuid.New()
	}
	a.ResponseBody = furrow.StorableText(a.ResponseBody, furrow.MaxResponseBody)
	a.Error = furrow.StorableText(a.Error, furrow.MaxAttemptError)
	failures, err := db.insertAttempt(ctx, a, eventID, counted)
	if isMissingPartition(err) {
		db.attemptParts.forget()
		if err = db.attemptParts.ensure(ctx, db, a.AtMs); err == nil {
			failures, err = db.insertAttempt(ctx, a, eventID, counted)
		}
	}
	return failures, translate(err, "add attempt", "webhook")
}

// insertAttemptSQL adds the row unless the same delivery's row at the same
// time is there already: a dispatcher that records an event as skipped a
// second time, after taking it over, adds nothing. The check uses the
// (webhook_id, at_ms) index of one partition.
const insertAttemptSQL = `INSERT INTO delivery_attempts
		(delivery_id, webhook_id, event_id, attempt, status_code, response_body, error, duration_ms, at_ms, signed_with)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
		WHERE NOT EXISTS (SELECT 1 FROM delivery_attempts WHERE webhook_id = $2 AND at_ms = $9 AND delivery_id = $1)`

// countedAttemptSQL is insertAttemptSQL returning the webhook's failure
// counter (NULL when it is gone), so that a delivery that raced with a
// failed chain's count learns the count and reports its chain.
//
// FOR KEY SHARE makes the read wait for a transaction that holds the row
// FOR UPDATE, as a failed chain's write does (lockWebhook), and then,
// under READ COMMITTED, return the row as that transaction committed it.
// It does not wait for a plain UPDATE (so that write locks first), nor
// block one. Either the write locks first, and this read returns its
// count, or this statement does, and the write's check, made once this
// commits, sees this row (SetWebhookState).
const countedAttemptSQL = `WITH w AS (SELECT consecutive_failures FROM webhooks WHERE id = $2 FOR KEY SHARE)
	` + insertAttemptSQL + `
	RETURNING (SELECT consecutive_failures FROM w)`

// insertAttempt adds the row, ECONFLICT when it is there already, and
// returns the webhook's failure counter when counted.
func (db *DB) insertAttempt(ctx context.Context, a furrow.Attempt, eventID uuid.UUID, counted bool) (int, error) {
	args := []any{a.DeliveryID, a.WebhookID, eventID, a.Attempt, a.StatusCode, a.ResponseBody, a.Error, a.DurationMs, a.AtMs,
		signedWith(a.SignedWith)}
	if counted {
		var failures *int
		err := db.pool.QueryRow(ctx, countedAttemptSQL, args...).Scan(&failures)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, errAttemptRecorded()
		}
		if failures == nil {
			return 0, err
		}
		return *failures, err
	}
	tag, err := db.pool.Exec(ctx, insertAttemptSQL, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return 0, errAttemptRecorded()
	}
	return 0, err
}

func errAttemptRecorded() error {
	return furrow.Errorf(furrow.ECONFLICT, "This attempt is already recorded.")
}

// signedWith is the stored form of an attempt's SignedWith: never NULL.
func signedWith(versions []int) []int32 {
	out := make([]int32, len(versions))
	for i, v := range versions {
		out[i] = int32(v)
	}
	return out
}

// isMissingPartition reports the error of a row that no partition accepts.
func isMissingPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgCheckViolation && pe.ConstraintName == "" &&
		strings.Contains(pe.Message, "no partition")
}

// Attempts lists a webhook's attempts newest first, by (at_ms, seq); Before
// continues from a cursor returned earlier. Limit defaults to 100 and is
// capped at 1000. The cursor returned is nil when no attempt is left.
func (db *DB) Attempts(ctx context.Context, f furrow.AttemptFilter) ([]furrow.Attempt, *furrow.Cursor, error) {
	// An answer is kept to furrow.MaxResponseBody: the page is one
	// statement.
	as, next, err := readPage(ctx, db, furrow.ListLimit(f.Limit), 0, f.Before,
		func(before *furrow.Cursor, n int) (string, []any) { return attemptsQuery(f, before, n) },
		scanAttempt, func(a furrow.Attempt) int64 { return a.AtMs })
	if err != nil {
		return nil, nil, translate(err, "list attempts", "webhook")
	}
	return as, next, nil
}

// attemptsQuery is the statement of Attempts and its arguments, for limit
// rows before the cursor before (f.Before is the first page's).
func attemptsQuery(f furrow.AttemptFilter, before *furrow.Cursor, limit int) (string, []any) {
	q := `SELECT seq, delivery_id, webhook_id, event_id, attempt, status_code,
		response_body, error, duration_ms, at_ms, signed_with
		FROM delivery_attempts WHERE webhook_id = $1`
	return newestFirst(q, []any{f.WebhookID}, "at_ms", before, limit)
}

// scanAttempt reads a row of the delivery log.
func scanAttempt(r pgx.Row) (furrow.Attempt, error) {
	var a furrow.Attempt
	var ev uuid.UUID
	err := r.Scan(&a.DeliveryID, &a.WebhookID, &ev, &a.Attempt, &a.StatusCode,
		&a.ResponseBody, &a.Error, &a.DurationMs, &a.AtMs, &a.SignedWith)
	a.EventID = furrow.EventID(ev)
	if a.SignedWith == nil {
		a.SignedWith = []int{}
	}
	return a, err
}

// PruneAttempts drops the day partitions of the delivery log that end at or
// before before, and returns how many attempts they held. Whole partitions
// go, so the cost does not grow with the log, and attempts are kept up to a
// day longer than asked. It also creates the partitions of the next days.
// The test events, which only attempts refer to, go when they are older
// than before.
func (db *DB) PruneAttempts(ctx context.Context, before time.Time) (int64, error) {
	r, err := db.attemptParts.prune(ctx, db, before)
	_, testErr := db.pruneTestEvents(ctx, furrow.Millis(before))
	return r.rows, errors.Join(translate(err, "prune attempts", "attempt"), testErr)
}
