package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// claimSQL leases undispatched events from the outbox floor $6 on, so
// that the partitions before it are pruned when the statement is planned
// (or, with a generic plan, when it starts) and the walk of the index of
// undispatched events starts at the floor, past the entries that
// dispatched events left before it. An event is updated by its key, which
// names its partition.
const claimSQL = `
		WITH c AS (
			SELECT id, occurred_at_ms FROM events
			WHERE dispatched_at_ms IS NULL AND occurred_at_ms >= $6
				AND (lease_until_ms IS NULL OR lease_until_ms <= $1) AND farm_id <> ALL($5)
			ORDER BY occurred_at_ms, seq
			LIMIT $2
			FOR UPDATE SKIP LOCKED)
		UPDATE events e SET lease_until_ms = $3, lease_owner = $4 FROM c
		WHERE e.id = c.id AND e.occurred_at_ms = c.occurred_at_ms AND e.occurred_at_ms >= $6
		RETURNING e.seq, e.id, e.type, e.farm_id, e.occurred_at_ms, e.data, coalesce(e.trace_parent, '')`

// ClaimEvents leases up to c.Limit undispatched events whose lease is free
// or expired to c.Owner, oldest first. Rows locked by another claimer are
// skipped, so two dispatchers never receive the same event while its lease
// lasts.
func (db *DB) ClaimEvents(ctx context.Context, c furrow.Claim) ([]furrow.Event, error) {
	if c.Limit <= 0 {
		return nil, nil
	}
	skip := c.SkipFarms
	if skip == nil {
		skip = []uuid.UUID{}
	}
	floor, err := db.outboxFloor(ctx)
	if err != nil {
		return nil, translate(err, "claim events", "event")
	}
	// From is a floor of the claim's own: partitions before it are pruned
	// too.
	floor = max(floor, c.FromMs)
	now := db.nowMs()
	rows, _ := db.pool.Query(ctx, claimSQL, now, c.Limit, now+c.Lease.Milliseconds(), c.Owner, skip, floor)
	type claimed struct {
		seq int64
		e   furrow.Event
	}
	var out []claimed
	for rows.Next() {
		var c claimed
		var id uuid.UUID
		var data []byte
		if err := rows.Scan(&c.seq, &id, &c.e.Type, &c.e.FarmID, &c.e.OccurredAtMs, &data, &c.e.TraceParent); err != nil {
			rows.Close()
			return nil, translate(err, "claim events", "event")
		}
		c.e.ID, c.e.Data = furrow.EventID(id), data
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "claim events", "event")
	}
	// RETURNING has no order of its own.
	slices.SortFunc(out, func(a, b claimed) int {
		return cmp.Or(cmp.Compare(a.e.OccurredAtMs, b.e.OccurredAtMs), cmp.Compare(a.seq, b.seq))
	})
	events := make([]furrow.Event, len(out))
	for i, c := range out {
		events[i] = c.e
	}
	return events, nil
}

// afterFloor bounds a statement on undispatched events by the outbox
// floor, read by the statement itself: partitions before it are skipped
// when the statement runs.
const afterFloor = "occurred_at_ms >= (SELECT floor_ms FROM outbox_floor)"

// RenewLeases extends owner's unexpired leases of the undispatched events
// to lease from now. An expired lease is not renewed even if nobody took
// the event meanwhile: the claimer already let it go.
func (db *DB) RenewLeases(ctx context.Context, owner uuid.UUID, ids []string, lease time.Duration) (int, error) {
	us, err := parseEventIDs(ids)
	if err != nil || len(us) == 0 {
		return 0, err
	}
	now := db.nowMs()
	tag, err := db.pool.Exec(ctx, `UPDATE events SET lease_until_ms = $1
		WHERE id = ANY($2) AND lease_owner = $3 AND dispatched_at_ms IS NULL AND lease_until_ms > $4
			AND `+afterFloor,
		now+lease.Milliseconds(), us, owner, now)
	if err != nil {
		return 0, translate(err, "renew leases", "event")
	}
	return int(tag.RowsAffected()), nil
}

// ReleaseLeases ends owner's leases of the undispatched events, so that any
// dispatcher may claim them at once. Leases of other owners are untouched.
func (db *DB) ReleaseLeases(ctx context.Context, owner uuid.UUID, ids []string) (int, error) {
	us, err := parseEventIDs(ids)
	if err != nil || len(us) == 0 {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE events SET lease_until_ms = NULL, lease_owner = NULL
		WHERE id = ANY($1) AND lease_owner = $2 AND dispatched_at_ms IS NULL AND `+afterFloor, us, owner)
	if err != nil {
		return 0, translate(err, "release leases", "event")
	}
	return int(tag.RowsAffected()), nil
}

// HoldEvents turns owner's live leases of the undispatched events into
// holds: a lease owned by nobody until each one's hold from now (a
// released lease has no time), which no claim takes before it passes. One
// statement holds them all.
func (db *DB) HoldEvents(ctx context.Context, owner uuid.UUID, holds []furrow.Hold) (int, error) {
	ids := make([]string, len(holds))
	for i, h := range holds {
		ids[i] = h.EventID
	}
	us, err := parseEventIDs(ids)
	if err != nil || len(us) == 0 {
		return 0, err
	}
	now := db.nowMs()
	until := make([]int64, len(holds))
	for i, h := range holds {
		until[i] = now + h.For.Milliseconds()
	}
	tag, err := db.pool.Exec(ctx, `UPDATE events e SET lease_until_ms = h.until_ms, lease_owner = NULL
		FROM unnest($1::uuid[], $2::bigint[]) AS h(id, until_ms)
		WHERE e.id = h.id AND e.lease_owner = $3 AND e.dispatched_at_ms IS NULL AND e.lease_until_ms > $4
			AND e.`+afterFloor,
		us, until, owner, now)
	if err != nil {
		return 0, translate(err, "hold events", "event")
	}
	return int(tag.RowsAffected()), nil
}

// MarkDispatched records that the events were handed on; they are never
// claimed again. A malformed id is EINVALID; unknown ids are ignored.
func (db *DB) MarkDispatched(ctx context.Context, ids []string) error {
	us, err := parseEventIDs(ids)
	if err != nil || len(us) == 0 {
		return err
	}
	_, err = db.pool.Exec(ctx, `UPDATE events SET dispatched_at_ms = $1, lease_until_ms = NULL, lease_owner = NULL
		WHERE id = ANY($2) AND dispatched_at_ms IS NULL AND `+afterFloor,
		db.nowMs(), us)
	return translate(err, "mark dispatched", "event")
}

// parseEventIDs parses event ids; a malformed one is EINVALID.
func parseEventIDs(ids []string) ([]uuid.UUID, error) {
	us := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		u, err := furrow.ParseEventID(id)
		if err != nil {
			return nil, err
		}
		us = append(us, u)
	}
	return us, nil
}
