// Package store is the PostgreSQL persistence of Furrow. One *DB implements
// every service interface of package furrow (UserService, FarmService,
// DeviceService, ReadingService, EventService, Outbox, WebhookService and
// Retention) as methods sharing one connection pool. Errors are furrow
// errors: a missing row is ENOTFOUND, a duplicate ECONFLICT, a reference to
// a missing row ENOTFOUND; pgx types never leak out of the package.
package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/tcpdial"
	"github.com/furrowhq/furrow/keyring"
)

// Options tunes a DB. Zero values select the defaults.
type Options struct {
	// Clock gives "now" for every stored time; default furrow.SystemClock.
	Clock furrow.Clock
	// MaxConns bounds the connections; default 16, or the database URL's
	// pool_max_conns when it names one. It is raised to leave the reading
	// writers room beside other queries: each writer has a connection of
	// its own (writerPool), counted in MaxConns.
	MaxConns int32
	// Logger receives store diagnostics; default slog.Default().
	Logger *slog.Logger
	// Writers is the number of goroutines that group-commit readings;
	// default 1. A writer gathers whatever readings queued while its last
	// statement ran, so one writer makes the fewest, largest batches: on 2
	// cores at 64 connections it accepted 4,900 readings/s against 4,200
	// with two (BENCHMARKS.md).
	Writers int
	// MaxBatch bounds the readings committed in one transaction; default 256.
	MaxBatch int
	// ConnectTimeout bounds opening one connection, TCP and startup
	// together; default 3 s.
	ConnectTimeout time.Duration
	// DeadConnTimeout is how long a silent server may leave a connection
	// unanswered before it is dropped (keepalive probes, TCP_USER_TIMEOUT)
	// and bounds the liveness ping of a connection idle for over a second
	// before it is handed out; default 10 s, the ping at most 1 s.
	DeadConnTimeout time.Duration
	// Metrics is told of every group-commit transaction; nil: nobody.
	Metrics IngestMetrics
	// TraceParent returns the W3C traceparent of ctx's span, or "" when
	// there is none. The store keeps it, as plain text, with each event it
	// stores, so that the event's delivery continues the trace of the
	// request that stored it. Nil keeps none.
	TraceParent func(ctx context.Context) string
	// Keys seals webhook secrets at rest: its first key seals new ones,
	// every key opens. Nil stores new secrets unsealed; sealed ones then do
	// not open.
	Keys *keyring.Ring
}

// IngestMetrics records group commits: rows readings in one transaction,
// of which stored were committed (the others were refused).
type IngestMetrics interface {
	IngestBatch(rows, stored int)
}

// Defaults of the connection bounds in Options.
const (
	DefaultConnectTimeout  = 3 * time.Second
	DefaultDeadConnTimeout = 10 * time.Second
)

// DB is the PostgreSQL store. Its methods are safe for concurrent use.
type DB struct {
	pool *pgxpool.Pool
	// writers is the reading writers' own pool (writerPool).
	writers *pgxpool.Pool
	clock   furrow.Clock
	log     *slog.Logger
	ingest  *ingester
	// attemptParts, readingParts and eventParts are the day partitions of
	// the delivery log, of readings and of events.
	attemptParts *dayPartitions
	readingParts *dayPartitions
	eventParts   *dayPartitions
	obs          IngestMetrics
	traceParent  func(context.Context) string
	keys         *keyring.Ring
	// floorRaisedMs is when this DB last raised the outbox floor (Unix ms
	// of its clock).
	floorRaisedMs atomic.Int64
}

// Compile-time checks that DB implements the service interfaces.
var (
	_ furrow.UserService    = (*DB)(nil)
	_ furrow.FarmService    = (*DB)(nil)
	_ furrow.DeviceService  = (*DB)(nil)
	_ furrow.ReadingService = (*DB)(nil)
	_ furrow.EventService   = (*DB)(nil)
	_ furrow.Outbox         = (*DB)(nil)
	_ furrow.WebhookService = (*DB)(nil)
	_ furrow.Retention      = (*DB)(nil)
)

// Open returns a DB for databaseURL. Connections are made lazily, so Open
// succeeds while PostgreSQL is down (Ping reports it); it fails only on an
// unparsable URL. The caller must Close the DB.
func Open(ctx context.Context, databaseURL string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// The parse error may quote the URL and with it a password.
		return nil, fmt.Errorf("store: invalid database URL")
	}
	if opts.MaxConns == 0 && strings.Contains(databaseURL, "pool_max_conns") {
		opts.MaxConns = cfg.MaxConns // the operator sized the pool in the URL
	}
	opts = opts.withDefaults()
	writers := int32(opts.Writers)
	cfg.MaxConns = max(opts.MaxConns, writers+4) - writers
	cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	cfg.ConnConfig.DialFunc = tcpdial.Dialer(opts.ConnectTimeout, opts.DeadConnTimeout).DialContext
	cfg.PingTimeout = min(opts.DeadConnTimeout, time.Second)
	cfg.HealthCheckPeriod = opts.DeadConnTimeout
	cfg.AfterConnect = RegisterTypes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: create pool: %w", err)
	}
	wpool, err := pgxpool.NewWithConfig(ctx, writerPool(cfg, writers))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: create pool: %w", err)
	}
	attempts, readings, events := newDayPartitions()
	db := &DB{pool: pool, writers: wpool, clock: opts.Clock, log: opts.Logger, obs: opts.Metrics, traceParent: opts.TraceParent, keys: opts.Keys,
		attemptParts: attempts, readingParts: readings, eventParts: events}
	db.ingest = startIngester(db, opts.Writers, opts.MaxBatch)
	return db, nil
}

// RegisterTypes teaches a new connection to encode and scan uuid.UUID as
// the uuid it is. Without it pgx takes the type's driver.Valuer and
// sql.Scanner paths: a string, a failed plan and about twenty allocations
// for each uuid sent or read. It is the AfterConnect of the store's pool,
// and of any other pool that writes Furrow's rows.
func RegisterTypes(_ context.Context, conn *pgx.Conn) error {
	pgxuuid.Register(conn.TypeMap())
	return nil
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = furrow.SystemClock{}
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Writers <= 0 {
		o.Writers = 1
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.DeadConnTimeout <= 0 {
		o.DeadConnTimeout = DefaultDeadConnTimeout
	}
	return o
}

// writerPool is the configuration of the reading writers' pool: one
// connection a writer, like cfg (its AfterConnect included) but for
// plan_cache_mode. A batch of one or two readings, as at moderate rates,
// made PostgreSQL plan the writers' statement anew each time (its custom
// plan looks cheaper than the generic one for a short batch), which cost
// more than the rows themselves: at 1,000 readings/s, 0.55 ms of
// PostgreSQL's CPU a reading against 0.31 with the generic plan
// (BENCHMARKS.md). The statement's plan does not depend on
// its values, and it names no partition (rows are routed as they are
// inserted), so the generic plan is the same plan, made once. The setting
// is a SET after connecting rather than a startup parameter, which a
// connection pooler in front of PostgreSQL may refuse.
func writerPool(cfg *pgxpool.Config, writers int32) *pgxpool.Config {
	w := cfg.Copy()
	w.MaxConns = writers
	connected := cfg.AfterConnect
	w.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if connected != nil {
			if err := connected(ctx, conn); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
		return err
	}
	return w
}

// Close stops accepting readings, commits those already queued, and closes
// the pools. It must be called once, after the last use of the DB.
func (db *DB) Close() {
	db.ingest.close()
	db.writers.Close()
	db.pool.Close()
}

// Ping reports whether PostgreSQL answers, on a connection of each pool;
// the caller bounds it with ctx. A failed connection is discarded, so Ping
// succeeds again once PostgreSQL is back, and a reading that follows a
// successful Ping does not meet a writer's connection that died meanwhile.
// Both pools are pinged even when the first fails, so that one Ping while
// PostgreSQL is away discards the dead connections of both.
func (db *DB) Ping(ctx context.Context) error {
	var first error
	for _, p := range []*pgxpool.Pool{db.pool, db.writers} {
		if err := p.Ping(ctx); err != nil && first == nil {
			first = fmt.Errorf("store: ping: %w", err)
		}
	}
	return first
}

func (db *DB) nowMs() int64 { return db.clock.Now().UnixMilli() }
