// Package api is the HTTP layer of Furrow: the device reading endpoint, the
// probes and the management API, with their authentication, rate limiting
// and error mapping. It depends only on the service interfaces of package
// furrow; cmd/furrow wires the concrete implementations.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/go-chi/chi/v5"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultReenableWait = 5 * time.Second
	// DefaultRequestTimeout bounds a request's work when Config leaves it
	// zero.
	DefaultRequestTimeout = 5 * time.Second
)

// Config holds the settings of the HTTP layer, read by the caller.
type Config struct {
	// TrustedProxies are the TCP peers whose X-Client-Cert-CN header is
	// believed. From any other peer the header is ignored.
	TrustedProxies []netip.Prefix
	// AllowPrivateWebhooks accepts http and private or loopback webhook
	// addresses (tests and development only); see safehttp.ValidateURL.
	AllowPrivateWebhooks bool
	// Thresholds decide the status shown for each device.
	Thresholds furrow.Thresholds
	// MaxBodyBytes bounds every request body; larger is 413. Default 64 KiB.
	MaxBodyBytes int64
	// ReenableWait bounds how long re-enabling a webhook waits for its
	// workflow to apply the change. Default 5 s; the wait ends a fifth of
	// the RequestTimeout before the request's deadline in any case
	// (answerReserve), so that a slow workflow is answered 202 in time.
	ReenableWait time.Duration
	// RequestTimeout is the deadline of each request's work, every store
	// and limiter call included (not of WebSocket sessions); a request
	// that runs out of it answers 500 internal_error with retry-after. It
	// starts again once the body is in: the server's ReadTimeout bounds a
	// slow body. Default 5 s.
	RequestTimeout time.Duration
	// WriteTimeout is the server's write timeout. Once a body is in, the
	// answer is given it again from then, as the work is given its
	// RequestTimeout again: a slow body must not leave a stored reading
	// without time to tell the device. Default 3 × RequestTimeout.
	WriteTimeout time.Duration
}

// Pinger reports whether a dependency (the database) is reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the services the HTTP layer calls.
type Deps struct {
	Users     furrow.UserService
	Farms     furrow.FarmService
	Devices   furrow.DeviceService
	Readings  furrow.ReadingService
	Events    furrow.EventService
	Webhooks  furrow.WebhookService
	Delivery  furrow.DeliveryControl
	Limiter   furrow.RateLimiter // nil: an in-process limiter of the standard size
	Publisher furrow.Publisher   // nil: readings are not published
	// EventPublisher publishes the app's events to the live bus; nil: they
	// are not published.
	EventPublisher furrow.EventPublisher
	Waker          furrow.Waker // nil: the dispatcher relies on its sweep
	Ready          Pinger       // nil: always ready
	Clock          furrow.Clock // nil: the system clock
	Logger         *slog.Logger // nil: logs are discarded
	Metrics        Metrics      // nil: nothing is counted
	// Live serves GET /api/live, after the API authenticated the user and
	// authorized the topics, and LivePage GET /live, when set.
	Live     LiveServer
	LivePage http.Handler
	// TestLimiter counts test deliveries per webhook
	// (furrow.TestDeliveryLimit per furrow.TestDeliveryWindow); nil: an
	// in-process one.
	TestLimiter furrow.RateLimiter
	// Control is what the webhook owner's API asks of the delivery engine
	// beyond Delivery; nil: Delivery, when it implements it (as
	// temporal.Control does). Without one, a redelivery since a time or
	// under an idempotency key answers 500, and a delete leaves the
	// webhook's workflow to find the webhook gone on its own.
	Control furrow.WebhookControl
}

// Metrics counts what the management API changes, for the process's
// metrics (cmd/furrow wires *telemetry.Metrics).
type Metrics interface {
	// SecretRotated counts a rotated webhook signing secret.
	SecretRotated()
}

type noMetrics struct{}

func (noMetrics) SecretRotated() {}

// server carries the configuration and dependencies of the handlers.
type server struct {
	cfg  Config
	keys *keyCache
	Deps
}

// New returns the HTTP handler of the whole service.
func New(cfg Config, deps Deps) http.Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.ReenableWait <= 0 {
		cfg.ReenableWait = DefaultReenableWait
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 3 * cfg.RequestTimeout
	}
	if deps.Clock == nil {
		deps.Clock = furrow.SystemClock{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Metrics == nil {
		deps.Metrics = noMetrics{}
	}
	if c, ok := deps.Delivery.(furrow.WebhookControl); ok && deps.Control == nil {
		deps.Control = c
	}
	if deps.Limiter == nil {
		deps.Limiter = ratelimit.NewMemory(furrow.RateLimit, furrow.RateWindow, deps.Clock)
	}
	if deps.TestLimiter == nil {
		deps.TestLimiter = ratelimit.NewMemory(furrow.TestDeliveryLimit, furrow.TestDeliveryWindow, deps.Clock)
	}
	s := &server{cfg: cfg, keys: newKeyCache(keyCacheSize), Deps: deps}
	return s.routes()
}

func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(requestID, s.logRequests, s.recoverer, s.deadline, headAsGet(r))
	r.NotFound(s.handle(func(http.ResponseWriter, *http.Request) error {
		return furrow.Errorf(furrow.ENOTFOUND, "There is no such endpoint.")
	}))
	mux := r
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		// chi lands here for a method it knows no route of (FOO), on any
		// path: a path no method has is still not found.
		allow := allowedMethods(mux, r)
		if allow == "" {
			return furrow.Errorf(furrow.ENOTFOUND, "There is no such endpoint.")
		}
		w.Header().Set("Allow", allow)
		return errMethod(r.Method)
	}))
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/api/openapi.json", s.openAPI)
	r.Post("/api/metric-values", s.handle(s.postMetricValue))
	if s.Live != nil {
		r.With(s.authUser(liveToken), s.wellFormedQuery).Get(livePath, untimed(s.handle(s.liveConnect)))
	}
	if s.LivePage != nil {
		r.Get("/live", s.LivePage.ServeHTTP)
	}
	s.farmRoutes(r)
	return r
}
