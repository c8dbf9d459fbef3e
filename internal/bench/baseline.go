package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/furrowhq/furrow/store"
)

// BaselineConfig sets up a baseline run.
type BaselineConfig struct {
	// DatabaseURL names the PostgreSQL server; the run uses a scratch
	// database beside it, dropped at the end.
	DatabaseURL string
	Concurrency int
	Duration    time.Duration
	// Warmup runs the same work first, unmeasured, while the connections
	// open.
	Warmup time.Duration
}

// BaselineResult is what a baseline run measured.
type BaselineResult struct {
	Transactions int64         `json:"transactions"`
	Failures     int64         `json:"failures"`
	Elapsed      time.Duration `json:"-"`
	TPS          float64       `json:"tps"`
	Latency      Summary       `json:"latency"`
}

// baselineDevices spreads the rows over a few devices, as a fleet would.
const baselineDevices = 100

// Baseline measures the PostgreSQL work one reading costs — its row and its
// outbox row in one transaction — over pgx with no HTTP in between, with
// cfg.Concurrency connections for cfg.Duration. It fails when the scratch
// database cannot be made or every transaction failed.
func Baseline(ctx context.Context, cfg BaselineConfig) (BaselineResult, error) {
	pool, farm, devices, done, err := seededScratch(ctx, "baseline", cfg.DatabaseURL, cfg.Concurrency)
	if err != nil {
		return BaselineResult{}, err
	}
	defer done()
	work := func(ctx context.Context, s slot, t *tally) {
		began := time.Now()
		if err := readingTx(ctx, pool, farm, devices[s.i%int64(len(devices))], s.i); err != nil {
			t.failures++
			t.lastErr = err
			return
		}
		t.latencies = append(t.latencies, s.since(began))
	}
	if cfg.Warmup > 0 {
		runLoad(ctx, cfg.Concurrency, newPace(cfg.Warmup, 0), work)
	}
	p := newPace(cfg.Duration, 0)
	t := runLoad(ctx, cfg.Concurrency, p, work)
	elapsed := time.Since(p.start)
	r := BaselineResult{Transactions: int64(len(t.latencies)), Failures: t.failures, Elapsed: elapsed, Latency: Summarize(t.latencies)}
	r.TPS = perSecond(r.Transactions, elapsed)
	if r.Transactions == 0 && t.lastErr != nil {
		return r, fmt.Errorf("baseline: no transaction committed: %w", t.lastErr)
	}
	return r, nil
}

// seededScratch makes a scratch database beside databaseURL with a farm and
// baselineDevices devices, and a pool of conns connections to it; done
// closes the pool and drops the database.
func seededScratch(ctx context.Context, what, databaseURL string, conns int) (*pgxpool.Pool, uuid.UUID, []uuid.UUID, func(), error) {
	dbURL, drop, err := ScratchDatabase(ctx, databaseURL)
	if err != nil {
		return nil, uuid.Nil, nil, nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		drop()
		return nil, uuid.Nil, nil, nil, fmt.Errorf("%s: database URL is not valid", what)
	}
	pcfg.MaxConns = int32(conns)
	pcfg.AfterConnect = store.RegisterTypes // as Furrow's own pool, so that its uuids cost the same
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		drop()
		return nil, uuid.Nil, nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	done := func() { pool.Close(); drop() }
	farm, devices, err := seedBaseline(ctx, pool)
	if err != nil {
		done()
		return nil, uuid.Nil, nil, nil, err
	}
	return pool, farm, devices, done, nil
}

// seedBaseline inserts the farm and baselineDevices devices the baseline
// and the database ceiling write for, within DBTimeout.
func seedBaseline(ctx context.Context, pool *pgxpool.Pool) (uuid.UUID, []uuid.UUID, error) {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	farm := uuid.New()
	now := time.Now().UnixMilli()
	if _, err := pool.Exec(ctx, "INSERT INTO farms (id, name, created_at_ms) VALUES ($1, 'baseline', $2)", farm, now); err != nil {
		return farm, nil, fmt.Errorf("baseline: seed farm: %w", err)
	}
	devices := make([]uuid.UUID, baselineDevices)
	for i := range devices {
		devices[i] = uuid.New()
		_, err := pool.Exec(ctx, "INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms) VALUES ($1, $2, $3, $4, $5)",
			devices[i], farm, "baseline", devices[i][:], now)
		if err != nil {
			return farm, nil, fmt.Errorf("baseline: seed device: %w", err)
		}
	}
	return farm, devices, nil
}

// readingTx stores one reading and its metric.value outbox row in one
// transaction: begin, both inserts in one round trip, commit; within
// DBTimeout.
func readingTx(ctx context.Context, pool *pgxpool.Pool, farm, device uuid.UUID, i int64) error {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	ts := time.Now().UnixMilli()
	value := strconv.FormatInt(i, 10)
	data, _ := json.Marshal(map[string]any{"device_id": device, "metric_id": 220, "value": value, "timestamp": ts})
	b := &pgx.Batch{}
	b.Queue("INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms) VALUES ($1, $2, 220, $3, $4)", device, farm, value, ts)
	b.Queue("INSERT INTO events (id, type, farm_id, occurred_at_ms, data) VALUES ($1, 'metric.value', $2, $3, $4::jsonb)",
		uuid.New(), farm, ts, string(data))
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}
