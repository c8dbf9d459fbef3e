package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/furrowhq/furrow"
)

const eventColumns = "id, type, farm_id, occurred_at_ms, data"

func scanEvent(row pgx.Row) (furrow.Event, error) {
	var (
		e    furrow.Event
		id   uuid.UUID
		data []byte
	)
	if err := row.Scan(&id, &e.Type, &e.FarmID, &e.OccurredAtMs, &data); err != nil {
		return furrow.Event{}, err
	}
	e.ID, e.Data = furrow.EventID(id), data
	return e, nil
}

// eventRows holds events as the column arrays of one multi-row insert.
type eventRows struct {
	ids, farms []uuid.UUID
	types      []string
	occurred   []int64
	data       []string
}

func (r *eventRows) add(id uuid.UUID, e furrow.Event) {
	r.ids = append(r.ids, id)
	r.types = append(r.types, e.Type)
	r.farms = append(r.farms, e.FarmID)
	r.occurred = append(r.occurred, e.OccurredAtMs)
	r.data = append(r.data, string(e.Data))
}

// dispatchedAt is the dispatched_at_ms of a new event of farm and type typ
// (SQL expressions): NULL, so that the dispatcher takes it, when a webhook
// of the farm subscribes to the type (enabled or not: a disabled one records
// it as skipped), else now. An event no webhook waits for is thus stored
// dispatched already, sparing the two writes of the row that claiming and
// marking it would cost; a webhook receives the events stored after it was
// created.
func dispatchedAt(farm, typ, now string) string {
	return `CASE WHEN EXISTS (SELECT 1 FROM webhooks w WHERE w.farm_id = ` + farm + `
		AND ` + subscribesSQL("w.event_types", typ) + `) THEN NULL ELSE ` + now + ` END`
}

// subscribesSQL is furrow.Webhook.Subscribes in SQL, for a webhook's
// event_types column types and an event type typ (SQL expressions): no
// types listed means furrow.DefaultEventTypes.
func subscribesSQL(types, typ string) string {
	return `CASE WHEN ` + types + ` = '{}' THEN ` + typ + ` = ANY (` + defaultTypesSQL + `) ELSE ` + typ + ` = ANY (` + types + `) END`
}

// defaultTypesSQL is furrow.DefaultEventTypes as an SQL text[] literal
// (event types hold no quote, comma or brace).
var defaultTypesSQL = `'{` + strings.Join(furrow.DefaultEventTypes, ",") + `}'::text[]`

// insertEventsSQL stores events in the outbox ($6 is now), those of farms
// that exist: events carry no foreign key (migration 0016), so the farm's
// row is locked as the key's check did. RETURNING says which events were
// stored and which of them wait for the dispatcher (see storedEvents).
var insertEventsSQL = `INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms)
	SELECT t.id, t.type, t.farm_id, t.occurred_at_ms, t.data::jsonb, ` + dispatchedAt("t.farm_id", "t.type", "$6::bigint") + `
	FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bigint[], $5::text[])
		AS t(id, type, farm_id, occurred_at_ms, data)
	JOIN farms f ON f.id = t.farm_id
	FOR KEY SHARE OF f
	RETURNING id, dispatched_at_ms IS NULL`

func (r *eventRows) args(nowMs int64) []any {
	return []any{r.ids, r.types, r.farms, r.occurred, r.data, nowMs}
}

// storedEvents reads rows of (event id, waits for the dispatcher): the ids
// stored, and those that wait.
func storedEvents(rows pgx.Rows) (stored, pending map[uuid.UUID]bool, err error) {
	stored, pending = map[uuid.UUID]bool{}, map[uuid.UUID]bool{}
	var id uuid.UUID
	var p bool
	_, err = pgx.ForEachRow(rows, []any{&id, &p}, func() error {
		stored[id], pending[id] = true, p
		return nil
	})
	return stored, pending, err
}

// insertEvents stores rows through q with insertEventsSQL and keeps the
// outbox floor at or before each pending one (keepFloor), so q must be a
// transaction when lowersFloor says so of one. It returns what
// storedEvents does.
func insertEvents(ctx context.Context, q execQuerier, rows *eventRows, nowMs int64) (stored, pending map[uuid.UUID]bool, err error) {
	res, _ := q.Query(ctx, insertEventsSQL, rows.args(nowMs)...) // Its error is res's.
	if stored, pending, err = storedEvents(res); err != nil {
		return nil, nil, err
	}
	oldest := int64(math.MaxInt64)
	for i, id := range rows.ids {
		if pending[id] {
			oldest = min(oldest, rows.occurred[i])
		}
	}
	return stored, pending, keepFloor(ctx, q, oldest, nowMs)
}

// execQuerier is a pool or a transaction.
type execQuerier interface {
	querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// CreateEvent stores e in the outbox and returns it, its data as stored.
// A zero OccurredAtMs gets the clock's now, an empty ID a new evt_<uuid> (a
// UUIDv7 of that time) and empty Data {}. A malformed id, unknown type or non-object data
// is EINVALID, an unknown farm ENOTFOUND, a taken id and time ECONFLICT.
func (db *DB) CreateEvent(ctx context.Context, e furrow.Event) (furrow.OutboxEvent, error) {
	now := db.nowMs()
	if e.OccurredAtMs == 0 {
		e.OccurredAtMs = now
	}
	if e.ID == "" {
		e.ID = furrow.EventID(furrow.NewEventUUID(e.OccurredAtMs))
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	id, err := validEvent(e)
	if err != nil {
		return furrow.OutboxEvent{}, err
	}
	var rows eventRows
	rows.add(id, e)
	var (
		stored, pending bool
		data            []byte
	)
	// insert is insertEvents for one event, which also reads the data as
	// stored (see createEventSQL).
	insert := func(q execQuerier) error {
		var got uuid.UUID
		res, _ := q.Query(ctx, createEventSQL, rows.args(now)...) // Its error is res's.
		_, err := pgx.ForEachRow(res, []any{&got, &pending, &data}, func() error {
			stored = true
			return nil
		})
		if err != nil {
			return err
		}
		oldest := int64(math.MaxInt64)
		if pending {
			oldest = e.OccurredAtMs
		}
		return keepFloor(ctx, q, oldest, now)
	}
	ctx, cancel := boundWrite(ctx)
	defer cancel()
	err = db.withPartitions(ctx, []int64{e.OccurredAtMs}, func() error {
		if !lowersFloor(e.OccurredAtMs, now) {
			return insert(db.pool)
		}
		return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return insert(tx) })
	}, db.eventParts)
	switch {
	case err != nil:
		return furrow.OutboxEvent{}, translate(err, "create event", "farm")
	case !stored:
		return furrow.OutboxEvent{}, errFarmGone
	}
	e.Data = data
	return furrow.OutboxEvent{Event: e, Pending: pending}, nil
}

// createEventSQL is insertEventsSQL that also returns the data as jsonb
// stored it (keys ordered, numbers written out), which webhooks and the
// events API receive: the caller publishes the event on the live bus, and
// answers it, as they have it.
var createEventSQL = insertEventsSQL + ", data"

func validEvent(e furrow.Event) (uuid.UUID, error) {
	id, err := furrow.ParseEventID(e.ID)
	if err != nil {
		return uuid.Nil, err
	}
	if !furrow.IsEventType(e.Type) {
		return uuid.Nil, furrow.Errorf(furrow.EINVALID, "The event type is unknown.")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(e.Data, &obj) != nil || obj == nil {
		return uuid.Nil, furrow.Errorf(furrow.EINVALID, "The event data must be a JSON object.")
	}
	if err := furrow.CheckEventData(e.Data); err != nil {
		return uuid.Nil, err
	}
	return id, nil
}

// eventsQuery is the statement of Events and its arguments, for limit rows
// before the cursor before (f.Before is the first page's). A type other
// than metric.value is also written as not metric.value, in the words of
// the index of other types (migration 0017), so that even a generic plan
// may read it; metric.value is found through the farm's index.
func eventsQuery(f furrow.EventFilter, before *furrow.Cursor, limit int) (string, []any) {
	q := "SELECT seq, " + eventColumns + " FROM events WHERE farm_id = $1"
	args := []any{f.FarmID}
	if f.Type != "" {
		args = append(args, f.Type)
		q += fmt.Sprintf(" AND type = $%d", len(args))
		if f.Type != furrow.EventMetricValue {
			q += " AND " + otherTypesWhere
		}
	}
	if f.SinceMs != nil {
		args = append(args, *f.SinceMs)
		q += fmt.Sprintf(" AND occurred_at_ms >= $%d", len(args))
	}
	return newestFirst(q, args, "occurred_at_ms", before, limit)
}

// Event returns one event by its evt_<uuid> id; a malformed id is
// EINVALID, an unknown one ENOTFOUND. The id of a UUIDv7 names the day of
// its partition, which is read first, by the partition's own name: a
// query of the parent bounded to the day would be planned again at every
// call, as PostgreSQL plans a partitioned table's statements for their
// parameters, and that planning cost several times the read. Any other id,
// one whose event occurred on another day, or a day whose partition is
// gone, is looked up in every partition's key index.
func (db *DB) Event(ctx context.Context, id string) (furrow.Event, error) {
	u, err := furrow.ParseEventID(id)
	if err != nil {
		return furrow.Event{}, err
	}
	q, named := db.eventSQL(u)
	e, err := scanEvent(db.pool.QueryRow(ctx, q, u))
	if named && err != nil && ctx.Err() == nil {
		e, err = scanEvent(db.pool.QueryRow(ctx, eventAnywhereSQL, u))
	}
	return e, translate(err, "event", "event")
}

// eventAnywhereSQL reads the event $1 in every partition's key index.
const eventAnywhereSQL = "SELECT " + eventColumns + " FROM events WHERE id = $1 LIMIT 1"

// eventSQL is the statement that reads the event u first: in the
// partition its id names, if it names one (named is then true, and a miss
// is looked for again with eventAnywhereSQL), else everywhere.
func (db *DB) eventSQL(u uuid.UUID) (q string, named bool) {
	ms, ok := furrow.EventUUIDTime(u)
	if !ok {
		return eventAnywhereSQL, false
	}
	part := pgx.Identifier{db.eventParts.name(utcDay(time.UnixMilli(ms)))}.Sanitize()
	return "SELECT " + eventColumns + " FROM " + part + " WHERE id = $1", true
}

// Events lists a farm's events, newest first by (occurred_at_ms, seq),
// filtered by type and since (inclusive); Before continues from a cursor
// returned earlier. Limit defaults to 100 and is capped at 1000. The
// cursor returned is nil when no event is left.
func (db *DB) Events(ctx context.Context, f furrow.EventFilter) ([]furrow.Event, *furrow.Cursor, error) {
	// An event's data may be as large as a request's body, so a page of
	// large events ends after some tens of them (furrow.MaxPageBytes): the
	// page is read a default page at a time, growing, rather than ask
	// PostgreSQL for a thousand rows that it may leave.
	es, next, err := readPage(ctx, db, furrow.ListLimit(f.Limit), furrow.DefaultListLimit, f.Before,
		func(before *furrow.Cursor, n int) (string, []any) { return eventsQuery(f, before, n) },
		scanEvent, func(e furrow.Event) int64 { return e.OccurredAtMs })
	if err != nil {
		return nil, nil, translate(err, "list events", "farm")
	}
	return es, next, nil
}
