package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/furrowhq/furrow"
)

// CreateReading stores r (FarmID and DeviceID set by the caller) with the
// clock's now as its Timestamp, its metric.value event, and the device's
// last-seen time (clearing its offline mark), in one transaction. It returns
// r and the event once committed. Concurrent calls are group-committed: a
// writer goroutine gathers whatever is queued into one statement, waiting
// up to a millisecond for more while small batches keep coming fast
// (linger); a batch that fails is retried row by row so that one bad
// reading fails alone.
//
// keyHash, unless nil, is the hash of the bearer key the reading came with:
// the reading is stored only if that is still the device's key when the
// transaction runs, else the error is EUNAUTHORIZED. So a caller may take
// the device of a key from a cache, and a revoked key is still refused at
// once. An invalid reading is EINVALID, an unknown device (or one of
// another farm) ENOTFOUND. If ctx ends first the caller gets its error, but
// the reading may still be stored.
func (db *DB) CreateReading(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash) (furrow.Reading, furrow.OutboxEvent, error) {
	if err := validReading(r); err != nil {
		return furrow.Reading{}, furrow.OutboxEvent{}, err
	}
	r.Timestamp = db.nowMs()
	req := db.ingestReq(ctx, r, keyHash)
	if err := db.ingest.submit(ctx, req); err != nil {
		return furrow.Reading{}, furrow.OutboxEvent{}, err
	}
	select {
	case err := <-req.done:
		if err != nil {
			return furrow.Reading{}, furrow.OutboxEvent{}, err
		}
		return r, req.event, nil
	case <-ctx.Done():
		return furrow.Reading{}, furrow.OutboxEvent{}, fmt.Errorf("store: create reading: %w", ctx.Err())
	}
}

// validReading is the domain's rule plus the farm and device, which the
// caller sets.
func validReading(r furrow.Reading) error {
	if r.FarmID == uuid.Nil || r.DeviceID == uuid.Nil {
		return furrow.Errorf(furrow.EINVALID, "The reading needs a farm and a device.")
	}
	return r.Validate()
}

// ingestReq is one queued reading; done receives the outcome once.
type ingestReq struct {
	ctx     context.Context
	reading furrow.Reading
	keyHash []byte // nil: no key to check
	event   furrow.OutboxEvent
	eventID uuid.UUID
	done    chan error
}

// ingestReq is newIngestReq with the traceparent of ctx's span, so that
// the event's delivery continues the request's trace.
func (db *DB) ingestReq(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash) *ingestReq {
	req := newIngestReq(ctx, r, keyHash)
	if db.traceParent != nil {
		req.event.TraceParent = db.traceParent(ctx)
	}
	return req
}

func newIngestReq(ctx context.Context, r furrow.Reading, keyHash *furrow.SecretHash) *ingestReq {
	id := furrow.NewEventUUID(r.Timestamp)
	req := &ingestReq{ctx: ctx, reading: r, event: furrow.OutboxEvent{Event: furrow.NewMetricValueEvent(id, r)}, eventID: id, done: make(chan error, 1)}
	if keyHash != nil {
		req.keyHash = keyHash[:]
	}
	return req
}

// writeTimeout bounds one batch transaction. Callers' contexts do not
// cancel it, because a batch serves many callers, but it ends with the last
// of their deadlines: once every caller has been answered an error, a
// reading committed later would only be stored twice by the retry.
const writeTimeout = 30 * time.Second

// batchDeadline is the latest deadline of the batch's callers, at most
// writeTimeout from now.
func batchDeadline(batch []*ingestReq) time.Time {
	limit := time.Now().Add(writeTimeout)
	var latest time.Time
	for _, r := range batch {
		d, ok := r.ctx.Deadline()
		if !ok {
			return limit
		}
		if d.After(latest) {
			latest = d
		}
	}
	if latest.After(limit) {
		return limit
	}
	return latest
}

var errClosed = errors.New("store: closed")

// ingester is the group commit of readings. Each writer owns a queue, and a
// device's readings always go to the same one, so that writers of one
// process never wait on each other's device-row locks.
type ingester struct {
	db       *DB
	queues   []chan *ingestReq
	maxBatch int
	mu       sync.RWMutex // guards closed against sends on closed queues
	closed   bool
	wg       sync.WaitGroup
}

func startIngester(db *DB, writers, maxBatch int) *ingester {
	in := &ingester{db: db, queues: make([]chan *ingestReq, writers), maxBatch: maxBatch}
	in.wg.Add(writers)
	for i := range in.queues {
		in.queues[i] = make(chan *ingestReq, maxBatch)
		go in.run(in.queues[i])
	}
	return in
}

func (in *ingester) submit(ctx context.Context, req *ingestReq) error {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.closed {
		return errClosed
	}
	q := in.queues[binary.BigEndian.Uint32(req.reading.DeviceID[12:])%uint32(len(in.queues))]
	select {
	case q <- req:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store: create reading: %w", ctx.Err())
	}
}

// close stops new submissions and waits until the writers have committed
// everything queued.
func (in *ingester) close() {
	in.mu.Lock()
	if !in.closed {
		in.closed = true
		for _, q := range in.queues {
			close(q)
		}
	}
	in.mu.Unlock()
	in.wg.Wait()
}

// run takes whatever is queued, up to maxBatch, waits for more only when
// linger says so, and commits it.
func (in *ingester) run(queue chan *ingestReq) {
	defer in.wg.Done()
	batch := make([]*ingestReq, 0, in.maxBatch)
	var l linger
	for first := range queue {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < in.maxBatch {
			select {
			case r, ok := <-queue:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		if d := l.wait(len(batch), time.Now()); d > 0 {
			n := len(batch)
			batch = waitFor(queue, batch, min(lingerBatch, in.maxBatch), d)
			l.took(len(batch) - n)
		}
		in.commit(batch)
	}
}

// waitFor adds readings from queue to batch until it holds size, d has
// passed or the queue is closed.
func waitFor(queue chan *ingestReq, batch []*ingestReq, size int, d time.Duration) []*ingestReq {
	t := time.NewTimer(d)
	defer t.Stop()
	for len(batch) < size {
		select {
		case r, ok := <-queue:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		case <-t.C:
			return batch
		}
	}
	return batch
}

func (in *ingester) commit(batch []*ingestReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err // The caller has gone; nothing is stored for it.
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), batchDeadline(live))
	defer cancel()
	refused, err := in.db.writeReadingsPartitioned(ctx, live)
	if err == nil || len(live) == 1 || !rowLevel(err) {
		for _, r := range live {
			r.done <- cmp.Or(translate(err, "create reading", "device"), refused[r])
		}
		return
	}
	// The SQLSTATE only: messages of some errors quote row values.
	in.db.log.Warn("store: reading batch failed, retrying its rows one by one",
		"rows", len(live), "sqlstate", sqlState(err))
	for _, r := range live {
		refused, err := in.db.writeReadingsPartitioned(ctx, []*ingestReq{r})
		r.done <- cmp.Or(translate(err, "create reading", "device"), refused[r])
	}
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// rowLevel reports errors that one row can cause (data, integrity) or that
// a retry resolves (deadlock, serialization); others, such as a lost
// connection, would fail every row again.
func rowLevel(err error) bool {
	code := sqlState(err)
	return strings.HasPrefix(code, "22") || strings.HasPrefix(code, "23") || strings.HasPrefix(code, "40")
}

// storeReadingsSQL stores a batch in one statement, so that one snapshot
// decides which readings are stored: a reading whose device is gone, or
// whose key is no longer the device's, is left out together with its event
// and its last-seen update. Events are stored as insertEventsSQL does.
// Devices are updated in id order so that concurrent batches lock them in
// the same order; within a minute the update changes no indexed column, so
// it is a HOT update (migration 0009). Readings and events carry no foreign
// key (migration 0016): a reading is stored only if the update of its
// device found the row, under the row's lock, so a device deleted while
// the statement runs takes none of the batch's readings with it, nor
// leaves them behind. (IS TRUE keeps that IN a hashed subplan: as a join,
// which the planner would make a nested loop since it cannot count the
// CTEs' rows, a batch of 256 compared every reading with every device.)
// The result is that of insertEventsSQL.
var storeReadingsSQL = `
WITH u AS (
	SELECT * FROM unnest($1::uuid[], $2::bytea[], $3::uuid[], $4::integer[], $5::text[], $6::bigint[], $7::uuid[], $8::text[], $11::text[])
		AS u(device_id, key_hash, farm_id, metric_id, value, ts_ms, event_id, data, trace_parent)),
c AS (
	SELECT u.* FROM u WHERE EXISTS (SELECT 1 FROM devices d WHERE d.id = u.device_id
		AND d.farm_id = u.farm_id AND (u.key_hash IS NULL OR d.key_hash = u.key_hash))),
t AS (
	UPDATE devices d SET last_seen_ms = GREATEST(d.last_seen_ms, x.ts), offline_since_ms = NULL,
		seen_minute_ms = GREATEST(d.seen_minute_ms, x.ts - x.ts % ` + seenMinute + `)
	FROM (SELECT device_id, max(ts_ms) AS ts FROM c GROUP BY device_id ORDER BY device_id) x
	WHERE d.id = x.device_id
	RETURNING d.id),
ok AS (
	SELECT c.* FROM c WHERE (c.device_id IN (SELECT id FROM t)) IS TRUE),
r AS (
	INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms)
	SELECT device_id, farm_id, metric_id, value, ts_ms FROM ok),
e AS (
	INSERT INTO events (id, type, farm_id, occurred_at_ms, data, dispatched_at_ms, trace_parent)
	SELECT ok.event_id, $9::text, ok.farm_id, ok.ts_ms, ok.data::jsonb, ` + dispatchedAt("ok.farm_id", "$9::text", "$10::bigint") + `,
		NULLIF(ok.trace_parent, '')
	FROM ok
	RETURNING id, dispatched_at_ms IS NULL)
SELECT * FROM e`

// writeReadingsPartitioned is writeReadings once the day partitions of
// reqs exist, in readings and in events (a reading's event occurs at its
// timestamp).
func (db *DB) writeReadingsPartitioned(ctx context.Context, reqs []*ingestReq) (map[*ingestReq]error, error) {
	stamps := make([]int64, len(reqs))
	for i, q := range reqs {
		stamps[i] = q.reading.Timestamp
	}
	var refused map[*ingestReq]error
	err := db.withPartitions(ctx, stamps, func() (err error) {
		refused, err = db.writeReadings(ctx, reqs)
		return err
	}, db.readingParts, db.eventParts)
	return refused, err
}

// writeReadings stores reqs, their events and their devices' last-seen
// times in one transaction of one statement, and settles each request's
// event or its error: EUNAUTHORIZED for a key that is no longer the
// device's, ENOTFOUND for a device that is gone. The returned error is the
// statement's, for the caller to settle every request with.
func (db *DB) writeReadings(ctx context.Context, reqs []*ingestReq) (map[*ingestReq]error, error) {
	now := db.nowMs()
	oldest := reqs[0].reading.Timestamp
	for _, q := range reqs[1:] {
		oldest = min(oldest, q.reading.Timestamp)
	}
	if !lowersFloor(oldest, now) {
		refused, err := db.writeReadingsWith(ctx, db.writers, reqs, now)
		db.countStored(len(reqs), refused, err)
		return refused, err
	}
	// A reading that waited long for its batch: its event may have to
	// lower the outbox floor, in the batch's transaction.
	var refused map[*ingestReq]error
	err := pgx.BeginFunc(ctx, db.writers, func(tx pgx.Tx) (err error) {
		refused, err = db.writeReadingsWith(ctx, tx, reqs, now)
		return err
	})
	db.countStored(len(reqs), refused, err)
	return refused, err
}

// countStored records a committed batch of n readings, refused apart; a
// batch that failed stored nothing (its rows may be tried again one by one).
func (db *DB) countStored(n int, refused map[*ingestReq]error, err error) {
	if err == nil && db.obs != nil {
		db.obs.IngestBatch(n, n-len(refused))
	}
}

// writeReadingsWith is writeReadings at nowMs through q, which may be a
// transaction that writes more beside the readings, and must be one when
// lowersFloor says so of a reading's timestamp.
func (db *DB) writeReadingsWith(ctx context.Context, q execQuerier, reqs []*ingestReq, nowMs int64) (map[*ingestReq]error, error) {
	n := len(reqs)
	// The uuids go as [16]byte and the keys as a FlatArray, which pgx
	// encodes directly; uuid.UUID would take its driver.Valuer path, a
	// string and a failed plan per element, and [][]byte its reflection.
	var (
		devices, farms, events = make([][16]byte, 0, n), make([][16]byte, 0, n), make([][16]byte, 0, n)
		keys                   = make(pgtype.FlatArray[[]byte], 0, n)
		metrics                = make([]int32, 0, n)
		values, data, traces   = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		stamps                 = make([]int64, 0, n)
	)
	for _, q := range reqs {
		r := q.reading
		devices, farms, keys = append(devices, r.DeviceID), append(farms, r.FarmID), append(keys, q.keyHash)
		metrics, values, stamps = append(metrics, r.MetricID), append(values, r.Value), append(stamps, r.Timestamp)
		events, data = append(events, q.eventID), append(data, string(q.event.Data))
		traces = append(traces, q.event.TraceParent)
	}
	rows, _ := q.Query(ctx, storeReadingsSQL, devices, keys, farms, metrics, values, stamps, events, data,
		furrow.EventMetricValue, nowMs, traces) // Its error is rows'.
	stored, pending, err := storedReadingEvents(rows, n)
	if err != nil {
		return nil, err
	}
	refused := map[*ingestReq]error{}
	oldestPending := int64(math.MaxInt64)
	for _, q := range reqs {
		switch {
		case stored[q.eventID]:
			q.event.Pending = pending[q.eventID]
			if q.event.Pending {
				oldestPending = min(oldestPending, q.reading.Timestamp)
			}
		case q.keyHash != nil:
			refused[q] = errKeyRevoked
		default:
			refused[q] = errDeviceGone
		}
	}
	if err := keepFloor(ctx, q, oldestPending, nowMs); err != nil {
		return nil, err
	}
	return refused, nil
}

// storedReadingEvents is storedEvents for the ids of readings' events,
// scanned as [16]byte: a uuid.UUID target would take pgx's sql.Scanner path.
func storedReadingEvents(rows pgx.Rows, n int) (stored, pending map[uuid.UUID]bool, err error) {
	stored, pending = make(map[uuid.UUID]bool, n), make(map[uuid.UUID]bool, n)
	var id [16]byte
	var p bool
	_, err = pgx.ForEachRow(rows, []any{&id, &p}, func() error {
		stored[id], pending[id] = true, p
		return nil
	})
	return stored, pending, err
}

var (
	errKeyRevoked = furrow.Errorf(furrow.EUNAUTHORIZED, "The key is no longer the device's.")
	errDeviceGone = furrow.Errorf(furrow.ENOTFOUND, "The device was not found.")
	errFarmGone   = furrow.Errorf(furrow.ENOTFOUND, "The farm was not found.")
)
