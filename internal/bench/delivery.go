package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow/internal/loopback"
)

// DeliveryConfig sets up a delivery run.
type DeliveryConfig struct {
	// URL is a running server to measure, with DatabaseURL its database;
	// several API replicas of one deployment are given comma-separated and
	// get the readings in turn.
	// When URL is empty, Binary is started as `furrow dev` on a scratch
	// database beside DatabaseURL, with RedisURL, trusting the receiver.
	URL         string
	DatabaseURL string
	RedisURL    string
	Binary      string
	// CertDir keeps the receiver's certificate (receiver.pem), so that a
	// running server can be started trusting it; empty means a temporary
	// directory.
	CertDir     string
	Rate        float64
	Duration    time.Duration
	Drain       time.Duration // wait after the load for the last deliveries
	Devices     int
	Concurrency int
	Pid         int
	// TemporalAddress and Namespace name the Temporal of a running server;
	// with them (or with the started `furrow dev`'s own) the run measures
	// the bare engine first (see Engine). Empty TemporalAddress with URL
	// set, or NoEngine, skips that.
	TemporalAddress string
	Namespace       string
	NoEngine        bool
	Logger          *slog.Logger
}

// DeliveryResult is what a delivery run measured.
type DeliveryResult struct {
	Accepted      int64            `json:"accepted"`
	Status        map[string]int64 `json:"status"`
	Failures      int64            `json:"failures"`
	PostLatency   Summary          `json:"post_latency"`
	Latency       Summary          `json:"delivery_latency"` // 201 to the receiver's answer
	Delivered     int64            `json:"delivered"`
	InLoad        int64            `json:"delivered_during_load"`
	PerSecond     float64          `json:"deliveries_per_second"`
	Missing       int64            `json:"missing"`
	Duplicates    int64            `json:"duplicates"`
	Rejected      int64            `json:"rejected"`
	DrainTime     time.Duration    `json:"-"`
	Backlog       Backlog          `json:"backlog"`
	Memory        *Memory          `json:"memory,omitempty"`
	StartedServer string           `json:"started_server,omitempty"`
	// ServerCPU is the CPU seconds the server used from the start of the
	// load until the drain ended (when its pid is known).
	ServerCPU float64 `json:"server_cpu_s,omitempty"`
	// Cost is what the run cost the machine, load and drain.
	Cost Cost `json:"cost"`
	// Load is the machine's load average (1, 5, 15 minutes) when the run
	// began, and Settings PostgreSQL's settings that bear on the figures.
	Load     [3]float64        `json:"load_average"`
	Settings map[string]string `json:"postgres_settings,omitempty"`
	// Speed is the machine's speed before, during and after the runs.
	Speed Speed `json:"machine_speed_us"`
	// Engine is the bare engine's run on the same Temporal just before,
	// and VsEngine Furrow's figures as its fractions; nil when skipped.
	Engine   *EngineResult `json:"engine,omitempty"`
	VsEngine *EngineRatio  `json:"vs_engine,omitempty"`
}

// EngineRatio is Furrow's delivery as a fraction of the bare engine's on
// the same Temporal at the same offered rate: Rate above 1 means Furrow
// delivered more per second; the latency ratios above 1 mean Furrow was
// slower by that factor.
type EngineRatio struct {
	Rate float64 `json:"rate"`
	P50  float64 `json:"latency_p50"`
	P99  float64 `json:"latency_p99"`
	// CPU is the machine's busy CPU per delivery, Furrow's run over the
	// engine's: above 1, the share of Furrow's own work.
	CPU float64 `json:"machine_cpu"`
	// Extra is where Furrow's extra CPU per delivery goes, in ms: Furrow's
	// run's figure less the engine's for each share (see Cost.shares).
	Extra map[string]float64 `json:"extra_ms_per_delivery,omitempty"`
	// RatesDiffer is set when the two runs delivered at rates too far
	// apart for CPU and Extra to compare like with like: a delivery costs
	// less CPU at a higher rate, since Temporal and PostgreSQL batch more
	// work per wake-up.
	RatesDiffer bool `json:"rates_differ,omitempty"`
}

// sameRate is the least Rate at which the two runs' CPU per delivery is
// compared as like with like.
const sameRate = 0.95

// vsEngine compares r with e.
func vsEngine(r DeliveryResult, e EngineResult) *EngineRatio {
	rate := ratio(r.PerSecond, e.PerSecond)
	return &EngineRatio{
		Rate:        rate,
		P50:         ratio(float64(r.Latency.P50), float64(e.Latency.P50)),
		P99:         ratio(float64(r.Latency.P99), float64(e.Latency.P99)),
		CPU:         ratio(ratio(r.Cost.CPU["machine"], float64(r.Delivered)), ratio(e.Cost.CPU["machine"], float64(e.Delivered))),
		Extra:       extraOverEngine(r.Cost.shares(r.Delivered), e.Cost.shares(e.Delivered)),
		RatesDiffer: rate < sameRate || rate > 1/sameRate,
	}
}

// Delivery subscribes a verifying HTTPS receiver to a fresh farm, posts
// readings at cfg.Rate per second for cfg.Duration and measures, for each
// 201, the time until the receiver got its event; then it waits up to
// cfg.Drain for every accepted reading's event. It fails only when the run
// cannot be set up.
func Delivery(ctx context.Context, cfg DeliveryConfig) (DeliveryResult, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	certDir := cfg.CertDir
	if certDir == "" {
		dir, err := os.MkdirTemp("", "furrow-bench-")
		if err != nil {
			return DeliveryResult{}, err
		}
		defer os.RemoveAll(dir)
		certDir = dir
	}
	rcv, err := StartReceiver(certDir)
	if err != nil {
		return DeliveryResult{}, fmt.Errorf("receiver: %w", err)
	}
	defer rcv.Close()
	target := target{url: cfg.URL, databaseURL: cfg.DatabaseURL, pid: cfg.Pid, temporal: cfg.TemporalAddress}
	if cfg.URL == "" {
		stop, err := startDev(ctx, cfg, rcv.CAFile, log, &target)
		if err != nil {
			return DeliveryResult{}, err
		}
		defer stop()
	}
	log.Info("server under test", "url", target.url, "pid", target.pid, "started", target.started)
	fl, err := newFleet(ctx, target.databaseURL, target.replica(0), cfg.Devices)
	if err != nil {
		return DeliveryResult{}, err
	}
	hook, err := fl.client.CreateWebhook(ctx, fl.farm, rcv.URL)
	if err != nil {
		return DeliveryResult{}, err
	}
	log.Info("fleet and webhook ready", "farm", fl.farm, "devices", len(fl.devices), "receiver", rcv.URL)
	load, settings := loadAverage(), postgresSettings(ctx, target.databaseURL)
	var engine *EngineResult
	var speed Speed
	if !cfg.NoEngine && target.temporal != "" {
		speed.EngineStart = probeSpeed()
		sampler, cost := startSpeedSampler(speedInterval), startCost(ctx, target.databaseURL, target.pid)
		e, err := Engine(ctx, EngineConfig{
			TemporalAddress: target.temporal, Namespace: or(cfg.Namespace, "default"), Rate: cfg.Rate,
			Duration: cfg.Duration, Drain: cfg.Drain, Concurrency: cfg.Concurrency, Logger: log,
		}, rcv, hook.Secret)
		speed.EngineDuring = sampler.median()
		if err != nil {
			return DeliveryResult{}, err
		}
		e.Cost = cost.stop(ctx)
		e.Backlog.Limit = limitOf(e.Backlog, e.Cost, e.Delivered)
		engine = &e
	}
	rcv.Reset(hook.Secret)
	speed.Start = probeSpeed()
	sampler, cost := startSpeedSampler(speedInterval), startCost(ctx, target.databaseURL, target.pid)
	r := runDelivery(ctx, cfg, target, fl, rcv)
	r.Cost, r.Load, r.Settings = cost.stop(ctx), load, settings
	speed.During = sampler.median()
	speed.End = probeSpeed()
	r.Speed = speed
	r.Backlog.Limit = limitOf(r.Backlog, r.Cost, r.Delivered)
	if engine != nil {
		r.Engine, r.VsEngine = engine, vsEngine(r, *engine)
	}
	r.StartedServer = target.started
	if target.pid > 0 {
		if m, err := ReadMemory(target.pid); err == nil {
			r.Memory = &m
		}
	}
	return r, nil
}

// target is the server under test.
type target struct {
	url, databaseURL string
	temporal         string // host:port of its Temporal frontend
	pid              int
	started          string
}

// replica returns the URL of the API replica that gets request i: the
// comma-separated URLs in turn.
func (t target) replica(i int64) string {
	urls := strings.Split(t.url, ",")
	return urls[i%int64(len(urls))]
}

// startDev starts `furrow dev` on its own Temporal ports and data, trusting
// caFile, and points t at it.
func startDev(ctx context.Context, cfg DeliveryConfig, caFile string, log *slog.Logger, t *target) (func(), error) {
	dataDir, err := os.MkdirTemp("", "furrow-bench-dev-")
	if err != nil {
		return nil, err
	}
	frontend, err1 := loopback.FreeAddr()
	ui, err2 := loopback.FreeAddr()
	if err1 != nil || err2 != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("no free port for Temporal")
	}
	env := []string{
		"FURROW_DEV_DATA_DIR=" + dataDir, "FURROW_DEV_TEMPORAL_ADDR=" + frontend, "FURROW_DEV_UI_ADDR=" + ui,
		"FURROW_WEBHOOK_ALLOW_PRIVATE=true", "FURROW_WEBHOOK_CA_FILE=" + caFile,
	}
	t.temporal = frontend
	log.Info("starting furrow dev", "binary", cfg.Binary, "redis", cfg.RedisURL != "")
	stop, err := startServer(ctx, cfg.Binary, "dev", cfg.DatabaseURL, cfg.RedisURL, env, t)
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, err
	}
	return func() { stop(); os.RemoveAll(dataDir) }, nil
}

// runDelivery offers the load and gathers the figures.
func runDelivery(ctx context.Context, cfg DeliveryConfig, t target, fl *fleet, rcv *Receiver) DeliveryResult {
	var (
		mu       sync.Mutex
		accepted = map[string]time.Time{} // reading value -> 201 received
		count    atomic.Int64
	)
	hc := loadClient(cfg.Concurrency)
	defer hc.CloseIdleConnections()
	cpu := startCPU(t.pid)
	p := newPace(cfg.Duration, cfg.Rate)
	s := startSampler(ctx, t.databaseURL, fl.farm, p.start, func() int64 { return count.Load() - rcv.received() })
	tl := runLoad(ctx, cfg.Concurrency, p, func(ctx context.Context, i int64, tl *tally) {
		value := strconv.FormatInt(i, 10)
		began := time.Now()
		status, _, err := postReading(ctx, hc, t.replica(i), fl.devices[i%int64(len(fl.devices))], value)
		if err != nil {
			tl.failures++
			tl.lastErr = err
			return
		}
		tl.latencies = append(tl.latencies, time.Since(began))
		tl.status[status]++
		if status == 201 {
			mu.Lock()
			accepted[value] = time.Now()
			mu.Unlock()
			count.Add(1)
		}
	})
	loadEnd := time.Now()
	samples := s.stop()
	drained := waitDrained(ctx, rcv, count.Load(), cfg.Drain)

	r := DeliveryResult{Accepted: count.Load(), Status: map[string]int64{}, Failures: tl.failures, DrainTime: drained, ServerCPU: cpu.stop()}
	for code, n := range tl.status {
		r.Status[strconv.Itoa(code)] = n
	}
	r.PostLatency = Summarize(tl.latencies)
	lat, missing, inLoad := rcv.arrivalsOf(accepted, loadEnd)
	r.Missing, r.InLoad = missing, inLoad
	rcv.mu.Lock()
	r.Delivered, r.Duplicates, r.Rejected = int64(len(rcv.seen)), rcv.dups, rcv.rejected
	rcv.mu.Unlock()
	r.Latency = Summarize(lat)
	r.PerSecond = perSecond(r.InLoad, loadEnd.Sub(p.start))
	r.Backlog = analyse(samples, cfg.Duration, cfg.Rate)
	return r
}

// waitDrained waits until want events have arrived or limit passes, and
// returns how long it waited.
func waitDrained(ctx context.Context, rcv *Receiver, want int64, limit time.Duration) time.Duration {
	began := time.Now()
	for rcv.received() < want && time.Since(began) < limit && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(began)
}
