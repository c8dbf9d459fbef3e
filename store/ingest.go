package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/furrowhq/furrow"
)

// CreateReading stores r (FarmID and DeviceID set by the caller) with the
// clock's now as its Timestamp, its metric.value event, and the device's
// last-seen time (clearing its offline mark), in one transaction. It returns
// r and the event once committed. Concurrent calls are group-committed: a
// few writer goroutines gather whatever is queued into one transaction with
// multi-row statements; a batch that fails is retried row by row so that one
// bad reading fails alone. An invalid reading is EINVALID, an unknown device
// ENOTFOUND. If ctx ends first the caller gets its error, but the reading
// may still be stored.
func (db *DB) CreateReading(ctx context.Context, r furrow.Reading) (furrow.Reading, furrow.Event, error) {
	if err := validReading(r); err != nil {
		return furrow.Reading{}, furrow.Event{}, err
	}
	r.Timestamp = db.nowMs()
	req := newIngestReq(ctx, r)
	if err := db.ingest.submit(ctx, req); err != nil {
		return furrow.Reading{}, furrow.Event{}, err
	}
	select {
	case err := <-req.done:
		if err != nil {
			return furrow.Reading{}, furrow.Event{}, err
		}
		return r, req.event, nil
	case <-ctx.Done():
		return furrow.Reading{}, furrow.Event{}, fmt.Errorf("store: create reading: %w", ctx.Err())
	}
}

func validReading(r furrow.Reading) error {
	switch {
	case r.FarmID == uuid.Nil || r.DeviceID == uuid.Nil:
		return furrow.Errorf(furrow.EINVALID, "reading needs a farm and a device")
	case r.Value == "" || len(r.Value) > furrow.MaxValueBytes:
		return furrow.Errorf(furrow.EINVALID, "value must be 1 to %d bytes", furrow.MaxValueBytes)
	case !utf8.ValidString(r.Value) || strings.ContainsRune(r.Value, 0):
		return furrow.Errorf(furrow.EINVALID, "value must be valid UTF-8 without NUL characters")
	}
	return nil
}

// ingestReq is one queued reading; done receives the outcome once.
type ingestReq struct {
	ctx     context.Context
	reading furrow.Reading
	event   furrow.Event
	eventID uuid.UUID
	done    chan error
}

func newIngestReq(ctx context.Context, r furrow.Reading) *ingestReq {
	id := uuid.New()
	data, _ := json.Marshal(furrow.MetricValueData{
		DeviceID: r.DeviceID, MetricID: r.MetricID, Value: r.Value, Timestamp: r.Timestamp,
	}) // Marshalling this struct cannot fail.
	ev := furrow.Event{
		ID: "evt_" + id.String(), Type: furrow.EventMetricValue, FarmID: r.FarmID,
		OccurredAtMs: r.Timestamp, Data: data,
	}
	return &ingestReq{ctx: ctx, reading: r, event: ev, eventID: id, done: make(chan error, 1)}
}

// writeTimeout bounds one batch transaction; callers' contexts do not,
// because a batch serves many callers.
const writeTimeout = 30 * time.Second

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

// run takes whatever is queued, up to maxBatch, without waiting for more,
// and commits it.
func (in *ingester) run(queue chan *ingestReq) {
	defer in.wg.Done()
	batch := make([]*ingestReq, 0, in.maxBatch)
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
		in.commit(batch)
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := in.db.writeReadings(ctx, live)
	if err == nil || len(live) == 1 || !rowLevel(err) {
		for _, r := range live {
			r.done <- translate(err, "create reading", "device")
		}
		return
	}
	// The SQLSTATE only: messages of some errors quote row values.
	in.db.log.Warn("store: reading batch failed, retrying its rows one by one",
		"rows", len(live), "sqlstate", sqlState(err))
	for _, r := range live {
		r.done <- translate(in.db.writeReadings(ctx, []*ingestReq{r}), "create reading", "device")
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

const insertReadingsSQL = `INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms)
	SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::integer[], $4::text[], $5::bigint[])`

// Devices are updated in id order so that concurrent batches lock them in
// the same order and cannot deadlock.
const touchDevicesSQL = `UPDATE devices d
	SET last_seen_ms = GREATEST(d.last_seen_ms, u.ts), offline_since_ms = NULL
	FROM (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS t(id, ts) ORDER BY id) u
	WHERE d.id = u.id`

// writeReadings stores reqs, their events and their devices' last-seen
// times in one transaction of one round trip plus begin and commit.
func (db *DB) writeReadings(ctx context.Context, reqs []*ingestReq) error {
	n := len(reqs)
	var (
		devices, farms = make([]uuid.UUID, 0, n), make([]uuid.UUID, 0, n)
		metrics        = make([]int32, 0, n)
		values         = make([]string, 0, n)
		stamps         = make([]int64, 0, n)
		events         eventRows
		lastSeen       = make(map[uuid.UUID]int64, n)
	)
	for _, q := range reqs {
		r := q.reading
		devices, farms = append(devices, r.DeviceID), append(farms, r.FarmID)
		metrics, values, stamps = append(metrics, r.MetricID), append(values, r.Value), append(stamps, r.Timestamp)
		events.add(q.eventID, q.event)
		lastSeen[r.DeviceID] = max(lastSeen[r.DeviceID], r.Timestamp)
	}
	ids := make([]uuid.UUID, 0, len(lastSeen))
	for id := range lastSeen {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	seen := make([]int64, len(ids))
	for i, id := range ids {
		seen[i] = lastSeen[id]
	}
	b := &pgx.Batch{}
	b.Queue(insertReadingsSQL, devices, farms, metrics, values, stamps)
	var pending map[uuid.UUID]bool
	b.Queue(insertEventsSQL, events.args(db.nowMs())...).Query(func(rows pgx.Rows) error {
		var err error
		pending, err = pendingEvents(rows)
		return err
	})
	b.Queue(touchDevicesSQL, ids, seen)
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	for _, q := range reqs {
		q.event.Pending = err == nil && pending[q.eventID]
	}
	return err
}
