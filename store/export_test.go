package store

import (
	"context"
	"time"

	"github.com/furrowhq/furrow"
)

// CommitTogether stores rs through one group-commit batch, as if they had
// been queued at once, and returns each one's outcome. keys[i], if given, is
// the device key reading i came with.
func CommitTogether(db *DB, rs []furrow.Reading, keys ...string) []error {
	batch := make([]*ingestReq, len(rs))
	for i, r := range rs {
		r.Timestamp = db.nowMs()
		var hash *furrow.SecretHash
		if i < len(keys) && keys[i] != "" {
			h := furrow.HashSecret(keys[i])
			hash = &h
		}
		batch[i] = newIngestReq(context.Background(), r, hash)
	}
	db.ingest.commit(batch)
	errs := make([]error, len(rs))
	for i, q := range batch {
		errs[i] = <-q.done
	}
	return errs
}

// MigrateUpTo applies the migrations up to and including version.
func MigrateUpTo(ctx context.Context, databaseURL, version string) error {
	return migrateWith(ctx, databaseURL, version, defaultLockPatience, MigrateOptions{})
}

// MigrateWithLockPatience is Migrate with each try's wait for a table lock
// bounded by timeout, tries tries in all, pause apart.
func MigrateWithLockPatience(ctx context.Context, databaseURL string, timeout, pause time.Duration, tries int) error {
	return migrateWith(ctx, databaseURL, "", lockPatience{timeout: timeout, pause: pause, tries: tries}, MigrateOptions{})
}

// SweepCandidatesSQL is the offline sweep's candidate query, for plan tests.
const SweepCandidatesSQL = sweepCandidatesSQL

// HealthSQL is the query of AttemptHealth ($1 webhook ids, $2 since ms).
var HealthSQL = healthSQL

// ClaimSQL and BacklogSQL are the outbox's queries, for plan tests; their
// last parameter is the outbox floor.
const (
	ClaimSQL   = claimSQL
	BacklogSQL = backlogSQL
)

// RaiseOutboxFloor raises the outbox floor as retention does.
func RaiseOutboxFloor(ctx context.Context, db *DB) (int64, error) { return db.raiseOutboxFloor(ctx) }

// OutboxFloor returns the outbox floor, without raising it.
func OutboxFloor(ctx context.Context, db *DB) (int64, error) { return db.readOutboxFloor(ctx) }

// The outbox floor's timing (see recentEvent).
const (
	RecentEvent = recentEvent
	FloorLag    = floorLag
	RaiseEvery  = raiseEvery
)

// WriteReadingLate writes r, stamped at its Timestamp, as a batch of the
// group commit that runs now would: as a reading that waited for its batch.
func WriteReadingLate(ctx context.Context, db *DB, r furrow.Reading) (furrow.OutboxEvent, error) {
	req := db.ingestReq(ctx, r, nil)
	refused, err := db.writeReadingsPartitioned(ctx, []*ingestReq{req})
	if err == nil {
		err = refused[req]
	}
	return req.event, err
}

// EventsQuery is the statement of Events and its arguments, for plan tests.
func EventsQuery(f furrow.EventFilter) (string, []any) { return eventsQuery(f, f.Before, f.Limit) }

// ReadingsQuery is the statement of Readings and its arguments, for plan
// tests.
func ReadingsQuery(f furrow.ReadingFilter) (string, []any) {
	return readingsQuery(readingColumns, f, f.Before, nil, f.Limit)
}

// DevicesQuery is the statement of Devices and its arguments, for plan
// tests.
func DevicesQuery(f furrow.DeviceFilter) (string, []any) {
	return devicesQuery(f, furrow.ListLimit(f.Limit))
}

// AttemptsQuery is the statement of Attempts and its arguments, for plan
// tests.
func AttemptsQuery(f furrow.AttemptFilter) (string, []any) {
	return attemptsQuery(f, f.Before, f.Limit)
}

// WriterPlans returns how many times the reading writers' connection has
// planned their statement generically and custom-made, from
// pg_prepared_statements, which only that connection sees.
func WriterPlans(ctx context.Context, db *DB) (generic, custom int64, err error) {
	err = db.writers.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
		FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO readings%'`).Scan(&generic, &custom)
	return generic, custom, err
}

// PruneIdempotencyKeysBy is PruneIdempotencyKeys looking at batch devices
// a statement.
func PruneIdempotencyKeysBy(ctx context.Context, db *DB, before time.Time, batch int) (int64, error) {
	return db.pruneKeys(ctx, before, batch)
}
