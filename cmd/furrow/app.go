package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/api"
	"github.com/furrowhq/furrow/dispatch"
	"github.com/furrowhq/furrow/internal/redisclient"
	"github.com/furrowhq/furrow/live"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/telemetry"
	"github.com/furrowhq/furrow/temporal"
)

// liveRedisPrefix starts the Redis channels of the live bus, shared by the
// serves (which publish readings and hold the sockets) and the workers
// (which publish the events they store). Its version changes with the
// bus's message format, so that during a rolling upgrade the instances of
// each version talk among themselves and never hand a socket a message
// they cannot read (v2: each message carries its publication's id).
const liveRedisPrefix = "furrow:live:v2:"

// server is the API and the outbox dispatcher, wired from concrete types.
type server struct {
	cfg        Config
	log        *slog.Logger
	db         *store.DB
	redis      *redis.Client
	bus        *live.Bus
	live       *live.Server
	dispatcher *dispatch.Dispatcher
	http       *http.Server
	drain      *drain
	// stopWorker, when set, stops the worker beside the API during the
	// HTTP drain and before the store closes, so that its activities
	// finish with the store open.
	stopWorker func()
}

// newServer connects to PostgreSQL and Redis and assembles the API around
// the Temporal client tc. It does not start anything.
func newServer(ctx context.Context, cfg Config, obs *observability, log *slog.Logger, tc client.Client) (*server, error) {
	m := obs.metrics
	opts := storeOptions(cfg, log)
	opts.Metrics, opts.TraceParent = m, telemetry.TraceParent
	db, err := store.Open(ctx, cfg.DatabaseURL, opts)
	if err != nil {
		return nil, err
	}
	if err := checkKeyRing(ctx, db, log); err != nil {
		db.Close()
		return nil, err
	}
	go warnAtStart(ctx, db, log)
	s := &server{cfg: cfg, log: log, db: db, drain: &drain{ready: db}}
	if cfg.RedisURL != "" {
		if s.redis, err = redisclient.Open(cfg.RedisURL, redisOptions(cfg)); err != nil {
			db.Close()
			return nil, fmt.Errorf("FURROW_REDIS_URL: %w", err)
		}
		s.bus = live.NewRedisBus(s.redis, liveRedisPrefix, log)
	} else {
		log.Warn("FURROW_REDIS_URL is not set: the rate limiter and the live bus run in-process; run a single instance only")
		s.bus = live.NewMemoryBus(log)
	}
	limits := newRateLimiters(cfg, s.redis, m, log)
	s.live = live.NewServer(live.Deps{Bus: s.bus, Logger: log})
	s.dispatcher = dispatch.New(dispatch.Config{Schedule: cfg.RetrySchedule}, dispatch.Deps{
		Outbox: db, Webhooks: db, Starter: tc, Logger: log, Metrics: m, ContinueTrace: telemetry.WithTraceParent,
	})
	s.watch(m)
	m.WatchFailOpen(limits.failOpens)
	control := temporal.NewControl(tc, cfg.RetrySchedule).WithMetrics(m)
	handler := api.New(api.Config{
		TrustedProxies:       cfg.TrustedProxies,
		AllowPrivateWebhooks: cfg.WebhookAllowPrivate,
		Thresholds:           furrow.Thresholds{StaleAfter: cfg.DeviceStaleAfter, OfflineAfter: cfg.DeviceOfflineAfter},
		RequestTimeout:       cfg.Bounds.Request,
		WriteTimeout:         cfg.Bounds.Write,
	}, api.Deps{
		Users: db, Farms: db, Devices: db, Readings: obs.tracing.Readings(db), Events: db, Webhooks: db,
		Limiter: limits.readings, TestLimiter: limits.tests, Publisher: s.bus, EventPublisher: s.bus, Waker: s.dispatcher, Delivery: control,
		Ready: s.drain, Clock: furrow.SystemClock{}, Logger: log, Metrics: m,
		Live: s.live, LivePage: live.PageHandler(),
	})
	b := cfg.Bounds
	s.http = &http.Server{
		Addr: cfg.HTTPAddr, Handler: s.drain.wrap(m.HTTP(obs.tracing.HTTP(handler))),
		ReadHeaderTimeout: b.ReadHeader, ReadTimeout: b.Read, WriteTimeout: b.Write, IdleTimeout: b.Idle,
	}
	return s, nil
}

// watch exports the counters the server's parts keep themselves.
func (s *server) watch(m *telemetry.Metrics) {
	m.WatchLive(telemetry.LiveStats{
		Published: s.bus.Published, Dropped: s.bus.Dropped,
		Connections:     func() int { return s.live.Stats().Open },
		SlowDisconnects: func() uint64 { return s.live.Stats().SlowClosed },
	})
	m.WatchOutbox(s.db, s.log)
	watchSecrets(m, s.db, s.log)
}

// run serves HTTP and dispatches until ctx ends, then shuts down in order:
// the dispatcher stops at once (handing its claims back) and the drain
// begins (readiness off, `Connection: close`), then within
// FURROW_SHUTDOWN_TIMEOUT requests and the worker's activities finish and
// live sockets close, and the store closes (flushing pending readings).
// Events stored during the drain stay pending for another dispatcher's
// sweep, or this one's next start: the dispatcher is not kept running
// through the drain, whose bound the pods' grace period is derived from.
func (s *server) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("API listener (FURROW_HTTP_ADDR=%s): %w", s.cfg.HTTPAddr, err)
	}
	s.log.Info("API listening", "addr", ln.Addr().String())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error { return s.dispatcher.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		s.drain.on.Store(true)
		grace := drainGrace(s.cfg.ShutdownTimeout)
		s.log.Info("stopping: /readyz answers 503; requests and first attempts finish after the grace",
			"grace", grace, "shutdown_timeout", s.cfg.ShutdownTimeout)
		time.Sleep(grace)
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		// The worker finishes its activities, and live sockets close, while
		// requests finish: each has the whole timeout, so that a socket
		// slow to close never cuts off a reading in flight.
		var stopping sync.WaitGroup
		stopping.Go(func() {
			if s.stopWorker != nil {
				s.stopWorker()
			}
		})
		stopping.Go(func() { _ = s.live.Shutdown(sctx) })
		err := s.http.Shutdown(sctx)
		stopping.Wait()
		return err
	})
	err = g.Wait()
	s.close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if err == nil {
		s.log.Info("stopped")
	}
	return err
}

// storeOptions bounds the store's connections as the configuration says.
func storeOptions(cfg Config, log *slog.Logger) store.Options {
	return store.Options{Logger: log, ConnectTimeout: cfg.Bounds.Connect, DeadConnTimeout: cfg.Bounds.DeadConn, Keys: cfg.SecretKeys}
}

// redisOptions bounds Redis's connections as the store's.
func redisOptions(cfg Config) redisclient.Options {
	return redisclient.Options{ConnectTimeout: cfg.Bounds.Connect, DeadConnTimeout: cfg.Bounds.DeadConn}
}

func (s *server) close() {
	_ = s.bus.Close()
	s.db.Close()
	if s.redis != nil {
		_ = s.redis.Close()
	}
}
