package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// with them (or with the started `furrow dev`'s own, in its namespace
	// "default" whatever Namespace says) the run measures the bare engine
	// too, in turns with Furrow (see turnOrder). Empty TemporalAddress with
	// URL set, or NoEngine, skips that.
	TemporalAddress string
	Namespace       string
	NoEngine        bool
	// Turns is how many turns each side takes, each of Duration/Turns
	// (0: one); without the engine Furrow runs for Duration in one turn.
	Turns int
	// Environ is the environment a started server inherits (the bench
	// command passes its own), less its FURROW_* settings (see inherited).
	Environ []string
	Logger  *slog.Logger
}

// DeliveryResult is what a delivery run measured. PostLatency runs from
// each reading's scheduled time (see Pacing), its side's Latency from the
// 201 to the receiver's answer.
type DeliveryResult struct {
	Accepted      int64            `json:"accepted"`
	Status        map[string]int64 `json:"status"`
	Failures      int64            `json:"failures"`
	PostLatency   Summary          `json:"post_latency"`
	Duplicates    int64            `json:"duplicates"`
	Memory        *Memory          `json:"memory,omitempty"`
	StartedServer string           `json:"started_server,omitempty"`
	// ServerCPU is the CPU seconds the server used from the start of the
	// load until the drain ended (when its pid is known).
	ServerCPU float64 `json:"server_cpu_s,omitempty"`
	side
	// Load is the machine's load average (1, 5, 15 minutes) when the run
	// began, and Settings PostgreSQL's settings that bear on the figures.
	Load     [3]float64        `json:"load_average"`
	Settings map[string]string `json:"postgres_settings,omitempty"`
	// Speed is the machine's speed before, during and after the runs.
	Speed Speed `json:"machine_speed_us"`
	// Engine is the bare engine's turns on the same Temporal, and VsEngine
	// Furrow's figures as its fractions; nil when skipped.
	Engine   *EngineResult `json:"engine,omitempty"`
	VsEngine *EngineRatio  `json:"vs_engine,omitempty"`
	// Turns is how many turns each side took.
	Turns int `json:"turns"`
	// LeftBehind is what a run against a running server (URL) left there.
	LeftBehind *LeftBehind `json:"left_behind,omitempty"`
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
	// CPUByTurn is CPU turn by turn: Furrow's k-th turn over the engine's
	// k-th, the two run one beside the other. How far these spread is how
	// far the machine's speed moved during the run.
	CPUByTurn []float64 `json:"machine_cpu_by_turn,omitempty"`
	// TurnCost is each side's machine CPU per delivery, in ms, turn by
	// turn in the order each side ran them: whether a ratio moved with
	// Furrow's turns or the engine's.
	TurnCost *TurnCost `json:"machine_cpu_ms_by_turn,omitempty"`
	// Extra is where Furrow's extra CPU per delivery goes, in ms: Furrow's
	// run's figure less the engine's for each share (see Cost.shares).
	Extra map[string]float64 `json:"extra_ms_per_delivery,omitempty"`
	// RatesDiffer is set when the two runs delivered at rates too far
	// apart for CPU and Extra to compare like with like: a delivery costs
	// less CPU at a higher rate, since Temporal and PostgreSQL batch more
	// work per wake-up.
	RatesDiffer bool `json:"rates_differ,omitempty"`
}

// TurnCost is the machine's CPU per delivery of each turn of each side,
// in ms.
type TurnCost struct {
	Furrow []float64 `json:"furrow"`
	Engine []float64 `json:"engine"`
}

// newTurnCost returns the turns' costs of r and e, given in seconds.
func newTurnCost(r, e rawTurns) *TurnCost {
	ms := func(s []float64) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = 1000 * v
		}
		return out
	}
	return &TurnCost{Furrow: ms(r.cpu), Engine: ms(e.cpu)}
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
// 201, the time until the receiver got its event; each turn then waits up
// to cfg.Drain for every accepted reading's event. With the engine, the
// bare engine's turns alternate with Furrow's (see turnOrder). It fails
// only when the run cannot be set up.
func Delivery(ctx context.Context, cfg DeliveryConfig) (r DeliveryResult, err error) {
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
	if err != nil && fl == nil {
		return DeliveryResult{}, err
	}
	var hook *Webhook
	if target.started == "" {
		// A running server keeps what the run made there: the webhook is
		// deleted, the rest said.
		defer func() { r.LeftBehind = fl.leave(context.WithoutCancel(ctx), hook, log) }()
	}
	if err != nil {
		return DeliveryResult{}, err
	}
	h, err := fl.client.CreateWebhook(ctx, fl.farm, rcv.URL)
	if err != nil {
		return DeliveryResult{}, err
	}
	hook = &h
	log.Info("fleet and webhook ready", "farm", fl.farm, "devices", len(fl.devices), "receiver", rcv.URL)
	return measureDelivery(ctx, cfg, target, fl, rcv, h.Secret, log)
}

// measureDelivery runs the turns of a delivery run on fl's farm, whose
// webhook signs its deliveries to rcv with secret, and gathers the result.
func measureDelivery(ctx context.Context, cfg DeliveryConfig, tg target, fl *fleet, rcv *Receiver, secret string, log *slog.Logger) (DeliveryResult, error) {
	load, settings := loadAverage(), postgresSettings(ctx, tg.databaseURL)
	rcv.SetSecret(secret)
	var eng *engine
	if !cfg.NoEngine && tg.temporal != "" {
		var err error
		if eng, err = startEngine(engineConfig(cfg, tg, log), rcv, secret); err != nil {
			return DeliveryResult{}, err
		}
		defer eng.close()
	}
	r, engineResult, byTurn := runTurns(ctx, cfg, tg, fl, rcv, eng)
	r.Load, r.Settings = load, settings
	warnPacing(log, "delivery", r.Pacing, r.Unsent)
	if eng != nil {
		r.Engine, r.VsEngine = engineResult, vsEngine(r, *engineResult)
		r.VsEngine.CPUByTurn, r.VsEngine.TurnCost = byTurn, newTurnCost(r.raw, engineResult.raw)
		warnPacing(log, "bare engine", engineResult.Pacing, engineResult.Unsent)
	}
	r.StartedServer = tg.started
	if tg.pid > 0 {
		if m, err := ReadMemory(tg.pid); err == nil {
			r.Memory = &m
		}
	}
	return r, nil
}

// devNamespace is the one namespace of the started `furrow dev`'s embedded
// Temporal.
const devNamespace = "default"

// engineConfig is the bare engine's side of cfg's run on t: on the started
// `furrow dev`'s Temporal its namespace, whatever cfg.Namespace says (which
// names the namespace of a running server's Temporal).
func engineConfig(cfg DeliveryConfig, t target, log *slog.Logger) EngineConfig {
	ns := or(cfg.Namespace, devNamespace)
	if cfg.URL == "" {
		ns = devNamespace
	}
	return EngineConfig{
		TemporalAddress: t.temporal, Namespace: ns, Rate: cfg.Rate,
		Drain: cfg.Drain, Concurrency: cfg.Concurrency, Logger: log,
	}
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
	stop, err := startServer(ctx, cfg.Binary, "dev", cfg.Environ, cfg.DatabaseURL, cfg.RedisURL, env, t)
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, err
	}
	return func() { stop(); os.RemoveAll(dataDir) }, nil
}

// runTurns runs the turns of the engine, when there is one, and of Furrow,
// and returns each side's figures and Furrow's CPU per delivery over the
// engine's turn by turn.
func runTurns(ctx context.Context, cfg DeliveryConfig, t target, fl *fleet, rcv *Receiver, eng *engine) (DeliveryResult, *EngineResult, []float64) {
	turns, d := 1, cfg.Duration
	if eng != nil {
		turns = max(1, cfg.Turns)
		d = cfg.Duration / time.Duration(turns)
	}
	var (
		r     DeliveryResult
		e     EngineResult
		speed Speed
		tags  []string // Furrow's turns
	)
	for slot, isEngine := range turnOrder(turns) {
		if eng == nil && isEngine {
			continue
		}
		tag := "t" + strconv.Itoa(slot)
		probe := probeSpeed()
		sampler, meter := startSpeedSampler(speedInterval), startCost(ctx, t.databaseURL, t.pid)
		if isEngine {
			speed.EngineStart = cmp.Or(speed.EngineStart, probe)
			et := eng.turn(ctx, tag, d)
			et.Cost, et.raw.speed = meter.stop(ctx), sampler.samples()
			e.add(et)
			continue
		}
		speed.Start = cmp.Or(speed.Start, probe)
		tags = append(tags, tag)
		ft := runDelivery(ctx, cfg, t, fl, rcv, tag, d)
		ft.Cost, ft.raw.speed = meter.stop(ctx), sampler.samples()
		r.add(ft)
	}
	speed.End = probeSpeed()
	// Counted after every turn, so that a duplicate arriving during a
	// later turn counts too.
	r.Duplicates = rcv.duplicates(tags)
	speed.During, speed.EngineDuring = medianUS(r.raw.speed), medianUS(e.raw.speed)
	r.Speed = speed
	r.finish()
	if eng == nil {
		return r, nil, nil
	}
	e.finish()
	return r, &e, ratios(r.raw.cpu, e.raw.cpu)
}

// runDelivery offers the load for d, its readings' values tagged tag, and
// gathers the figures of that turn.
func runDelivery(ctx context.Context, cfg DeliveryConfig, t target, fl *fleet, rcv *Receiver, tag string, d time.Duration) DeliveryResult {
	var (
		mu       sync.Mutex
		accepted = map[string]time.Time{} // reading value -> 201 received
	)
	hc := loadClient(cfg.Concurrency)
	defer hc.CloseIdleConnections()
	cpu := startCPU(t.pid)
	m := startTurn(ctx, rcv, tag, d, cfg.Rate, t.databaseURL, fl.farm)
	tl := runLoad(ctx, cfg.Concurrency, m.pace, func(ctx context.Context, s slot, tl *tally) {
		value := turnValue(tag, s.i)
		began := time.Now()
		status, _, err := postReading(ctx, hc, t.replica(s.i), fl.devices[s.i%int64(len(fl.devices))], value)
		if err != nil {
			tl.failures++
			tl.lastErr = err
			return
		}
		tl.latencies = append(tl.latencies, s.since(began))
		tl.status[status]++
		if status == 201 {
			mu.Lock()
			accepted[value] = time.Now()
			mu.Unlock()
			m.sent.Add(1)
		}
	})
	got := m.end(ctx, cfg.Drain, accepted, tl)
	r := DeliveryResult{Accepted: m.sent.Load(), Status: map[string]int64{}, Failures: tl.failures, ServerCPU: cpu.stop(), side: got}
	for code, n := range tl.status {
		r.Status[strconv.Itoa(code)] = n
	}
	return r
}
