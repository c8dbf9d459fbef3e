package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// IngestConfig sets up an ingest run.
type IngestConfig struct {
	// URL is the API under test; DatabaseURL its database, where the run's
	// user is created and its stored rows are counted. When URL is empty,
	// Binary is started as `furrow serve` on a scratch database beside
	// DatabaseURL, with RedisURL and TemporalAddress.
	URL             string
	DatabaseURL     string
	Binary          string
	RedisURL        string
	TemporalAddress string
	Devices         int
	Concurrency     int
	Duration        time.Duration
	// Warmup is posted before Duration and reported apart: the server opens
	// its connections and learns the fleet's keys meanwhile. It lasts until
	// every device has posted once, if that takes longer, so that the
	// measured requests find every key learnt, but hands out no request
	// PaceGrace after that (see pace.atLeast). Its requests are checked
	// like the others.
	Warmup time.Duration
	// HTTPCeiling measures the machine's HTTP ceiling (see httpCeiling) in
	// turns with the measured run: the run is cut into ceilingTurns slices,
	// each after a slice of the ceiling as long. A shared machine's speed
	// drifts by half within a minute; in turns, both see the same machine.
	HTTPCeiling bool
	// Rate is the offered load in requests per second on an open-loop
	// schedule, whose latencies run from each request's scheduled time
	// (see slot.since); 0 is full speed, closed loop, timed from the send.
	Rate float64
	// Pid, when positive, is the server whose memory is read after the run.
	Pid int
	// Environ is the environment a started server inherits (the bench
	// command passes its own), less its FURROW_* settings (see inherited).
	Environ []string
	Logger  *slog.Logger
}

// IngestResult is what an ingest run measured.
type IngestResult struct {
	// Phase is the measured run's figures; on a paced run
	// (IngestConfig.Rate) its Latency runs from each request's scheduled
	// time.
	Phase
	RPS        float64 `json:"rps"`
	CreatedRPS float64 `json:"created_rps"`
	// Stored and Events count the farm's rows in the database after the
	// run, and Paired its readings that have their own event (the same
	// device and value; each request's value is unique in the run): each
	// must equal the 201s.
	Stored        int64   `json:"stored"`
	Events        int64   `json:"events"`
	Paired        int64   `json:"paired"`
	Memory        *Memory `json:"memory,omitempty"`
	StartedServer string  `json:"started_server,omitempty"`
	// Warmup is what the warm-up observed, not counted above.
	Warmup *Phase `json:"warmup,omitempty"`
	// ServerCPU is the CPU seconds the server used during the load (when
	// its pid is known): per request, a figure a busy machine barely moves.
	ServerCPU float64 `json:"server_cpu_s,omitempty"`
	// CPU is the CPU seconds of each process group during the load:
	// "furrow" (the server, when its pid is known), "postgres", "redis"
	// and "bench" (the load generator).
	CPU map[string]float64 `json:"cpu_s,omitempty"`
	// RedisCommands is what Redis counted of each command during the
	// load, when the run knows its Redis (IngestConfig.RedisURL).
	RedisCommands map[string]RedisCommand `json:"redis_commands,omitempty"`
	// HTTPCeiling is the ceiling measured in turns with the load, when
	// IngestConfig.HTTPCeiling asks for it.
	HTTPCeiling *CeilingResult `json:"-"`
	// SpeedUS is the median of the machine's speed sampled once a second
	// during the load (see speedSampler), in µs; more is slower.
	SpeedUS float64 `json:"machine_speed_us,omitempty"`
	// LeftBehind is what a run against a running server (URL) left there.
	LeftBehind *LeftBehind `json:"left_behind,omitempty"`
}

// ceilingTurns is the number of slices of the measured run when the HTTP
// ceiling is measured in turns with it.
const ceilingTurns = 5

// Phase is the figures of a part of a run.
type Phase struct {
	Requests    int64            `json:"requests"`
	Elapsed     time.Duration    `json:"-"`
	Latency     Summary          `json:"latency"`
	Status      map[string]int64 `json:"status"`
	Failures    int64            `json:"failures"`
	LastFailure string           `json:"last_failure,omitempty"`
	Pacing      *Pacing          `json:"pacing,omitempty"`
	Unsent      int64            `json:"unsent"`
}

// Created returns the number of 201 answers, warm-up excluded.
func (r IngestResult) Created() int64 { return r.Status["201"] }

// CreatedInAll returns the number of 201 answers, warm-up included: the
// readings that must be stored.
func (r IngestResult) CreatedInAll() int64 {
	if r.Warmup == nil {
		return r.Created()
	}
	return r.Created() + r.Warmup.Status["201"]
}

// ServerErrors returns the number of 5xx answers, warm-up included.
func (r IngestResult) ServerErrors() int64 {
	var n int64
	for _, status := range []map[string]int64{r.Status, r.warmupStatus()} {
		for code, c := range status {
			if strings.HasPrefix(code, "5") {
				n += c
			}
		}
	}
	return n
}

func (r IngestResult) warmupStatus() map[string]int64 {
	if r.Warmup == nil {
		return nil
	}
	return r.Warmup.Status
}

// Ingest creates a user, a fresh farm and cfg.Devices devices, then posts
// readings from cfg.Concurrency connections for cfg.Duration, each request
// from the next device in turn. It fails only when the fleet cannot be set
// up; failed requests are counted in the result.
func Ingest(ctx context.Context, cfg IngestConfig) (IngestResult, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	t := target{url: cfg.URL, databaseURL: cfg.DatabaseURL, pid: cfg.Pid}
	if cfg.URL == "" {
		// The farm has no webhook, so Temporal is never called; the lazy
		// client of `furrow serve` only needs an address.
		env := []string{"FURROW_TEMPORAL_ADDRESS=" + or(cfg.TemporalAddress, "127.0.0.1:7233")}
		log.Info("starting furrow serve", "binary", cfg.Binary, "redis", cfg.RedisURL != "")
		stop, err := startServer(ctx, cfg.Binary, "serve", cfg.Environ, cfg.DatabaseURL, cfg.RedisURL, env, &t)
		if err != nil {
			return IngestResult{}, err
		}
		defer stop()
	}
	log.Info("server under test", "url", t.url, "pid", t.pid, "started", t.started)
	r, err := ingest(ctx, cfg, t, log)
	r.StartedServer = t.started
	return r, err
}

func ingest(ctx context.Context, cfg IngestConfig, tg target, log *slog.Logger) (r IngestResult, err error) {
	fleet, err := newFleet(ctx, tg.databaseURL, tg.url, cfg.Devices)
	if fleet != nil && tg.started == "" {
		// A running server keeps what the run made there: say what.
		defer func() { r.LeftBehind = fleet.leave(context.WithoutCancel(ctx), nil, log) }()
	}
	if err != nil {
		return IngestResult{}, err
	}
	log.Info("fleet ready", "farm", fleet.farm, "devices", len(fleet.devices))
	hc := loadClient(cfg.Concurrency)
	var base atomic.Int64 // requests of the slices before, so devices keep their turns
	warm := warmUp(ctx, cfg, len(fleet.devices), readingPoster(hc, tg.url, fleet.devices, &base, "w"))
	r, t, err := measure(ctx, cfg, tg.pid, hc, readingPoster(hc, tg.url, fleet.devices, &base, ""), &base)
	if err != nil {
		return r, err
	}
	r.Warmup = warm
	r.fill(t, cfg.Rate)
	warnPacing(log, "ingest", r.Pacing, r.Unsent)
	if r.Stored, r.Events, r.Paired, err = countFarmRows(ctx, tg.databaseURL, fleet.farm); err != nil {
		return r, err
	}
	if tg.pid > 0 {
		m, err := ReadMemory(tg.pid)
		if err != nil {
			return r, err
		}
		r.Memory = &m
	}
	return r, nil
}

// readingPoster returns the work of a load that posts one reading a slot
// to baseURL, each from the next device in turn, its value prefix and the
// request's number, counted on from base.
func readingPoster(hc *http.Client, baseURL string, devices []Device, base *atomic.Int64, prefix string) func(context.Context, slot, *tally) {
	return func(ctx context.Context, s slot, t *tally) {
		i := s.i + base.Load()
		d := devices[i%int64(len(devices))]
		began := time.Now()
		status, _, err := postReading(ctx, hc, baseURL, d, prefix+strconv.FormatInt(i, 10))
		if err != nil {
			t.failures++
			t.lastErr = err
			return
		}
		t.latencies = append(t.latencies, s.since(began))
		t.status[status]++
	}
}

// warmUp posts with do for cfg.Warmup, and on until each of devices has
// posted once (within PaceGrace of the later of the two), and returns
// what it observed; nil without a warm-up.
func warmUp(ctx context.Context, cfg IngestConfig, devices int, do func(context.Context, slot, *tally)) *Phase {
	if cfg.Warmup <= 0 {
		return nil
	}
	p := newPace(cfg.Warmup, cfg.Rate).atLeast(int64(devices))
	w := runLoad(ctx, cfg.Concurrency, p, do)
	ph := &Phase{Elapsed: time.Since(p.start), Failures: w.failures, Latency: Summarize(w.latencies), Status: map[string]int64{},
		Pacing: w.pacing(cfg.Rate), Unsent: w.unsent}
	if w.lastErr != nil {
		ph.LastFailure = w.lastErr.Error()
	}
	for code, n := range w.status {
		ph.Status[strconv.Itoa(code)] = n
		ph.Requests += n
	}
	return ph
}

// fill sets r's request figures from t, the measured load's tally at rate.
func (r *IngestResult) fill(t *tally, rate float64) {
	for code, n := range t.status {
		r.Status[strconv.Itoa(code)] = n
		r.Requests += n
	}
	if t.lastErr != nil {
		r.LastFailure = t.lastErr.Error()
	}
	r.Latency = Summarize(t.latencies)
	r.Pacing, r.Unsent = t.pacing(rate), t.unsent
	r.RPS, r.CreatedRPS = perSecond(r.Requests, r.Elapsed), perSecond(r.Created(), r.Elapsed)
}

// warnPacing logs when a paced load offered less than asked or left
// requests unsent, so that --json runs say it too.
func warnPacing(log *slog.Logger, what string, p *Pacing, unsent int64) {
	if p != nil && p.Short {
		log.Warn(what+": the load offered less than the rate asked; the figures describe a lighter load",
			"asked_per_s", p.Rate, "offered_per_s", p.Offered, "send_lag_p99", p.SendLag.P99, "send_lag_max", p.SendLag.Max)
	}
	if unsent > 0 {
		log.Warn(what+": scheduled requests were never sent: "+unsentWhy, "unsent", unsent)
	}
}

// measure runs the measured load with do, in slices in turns with the HTTP
// ceiling when cfg asks for it, and returns the result's elapsed time, CPU,
// failures and ceiling, and the merged tally. base counts the requests of the
// slices before the current one.
func measure(ctx context.Context, cfg IngestConfig, pid int, hc *http.Client,
	do func(context.Context, slot, *tally), base *atomic.Int64) (IngestResult, *tally, error) {
	r := IngestResult{Phase: Phase{Status: map[string]int64{}}}
	all := &tally{status: map[int]int64{}}
	turns := 1
	var ceiling *httpCeiling
	ceilings := newCeilingSlices()
	if cfg.HTTPCeiling {
		c, err := startHTTPCeiling(cfg.Concurrency)
		if err != nil {
			return r, all, err
		}
		defer c.close()
		ceiling, turns = c, ceilingTurns
	}
	rm := newRedisMeter(cfg.RedisURL)
	defer rm.close()
	slice := cfg.Duration / time.Duration(turns)
	var speeds []time.Duration
	for range turns {
		if ceiling != nil {
			ceilings.run(ctx, ceiling, slice)
		}
		cmds := rm.read(ctx)
		cpu, groups, speed := startCPU(pid), startGroupCPUWith(pid), startSpeedSampler(speedInterval)
		p := newPace(slice, cfg.Rate)
		t := runLoad(ctx, cfg.Concurrency, p, do)
		r.Elapsed += time.Since(p.start)
		r.ServerCPU += cpu.stop()
		r.CPU = addCPU(r.CPU, groups.stop())
		speeds = append(speeds, speed.samples()...)
		r.RedisCommands = addCommandDelta(r.RedisCommands, cmds, rm.read(ctx))
		base.Add(t.failures)
		for _, n := range t.status {
			base.Add(n)
		}
		all.merge(t)
	}
	hc.CloseIdleConnections()
	r.Failures, r.SpeedUS = all.failures, medianUS(speeds)
	if ceiling != nil {
		c, err := ceilings.result()
		if err != nil {
			return r, all, err
		}
		r.HTTPCeiling = &c
	}
	return r, all, nil
}

// fleet is a farm with its devices.
type fleet struct {
	client  *Client
	farm    string
	devices []Device
}

// newFleet creates a user, a farm and devices devices through the API at
// baseURL. On an error after the user's creation it returns what was made
// so far with the error, so that a run against a running server can say
// what it leaves there.
func newFleet(ctx context.Context, databaseURL, baseURL string, devices int) (*fleet, error) {
	c, err := NewUser(ctx, databaseURL, baseURL)
	if err != nil {
		return nil, err
	}
	f := &fleet{client: c}
	if f.farm, err = c.CreateFarm(ctx, fmt.Sprintf("bench %s", time.Now().Format(time.RFC3339))); err != nil {
		return f, err
	}
	f.devices, err = c.CreateDevices(ctx, f.farm, devices)
	return f, err
}

// loadClient keeps one connection per worker open.
func loadClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// postReading posts one reading of metric 220 as device d and returns the
// status and body of the answer.
func postReading(ctx context.Context, hc *http.Client, baseURL string, d Device, value string) (int, []byte, error) {
	body := `{"device_id":"` + d.ID + `","metric_id":220,"value":"` + value + `"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/api/metric-values", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.Key)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, b, err
}

// farmRowsSQL counts the farm's readings, its metric.value events, and
// its readings that have an event of the same device and value. Each
// request of a run has a value of its own, so a reading pairs with its
// own event and no other.
const farmRowsSQL = `SELECT (SELECT count(*) FROM readings WHERE farm_id = $1),
	(SELECT count(*) FROM events WHERE farm_id = $1 AND type = 'metric.value'),
	(SELECT count(*) FROM readings r WHERE r.farm_id = $1 AND EXISTS (SELECT 1 FROM events e
		WHERE e.farm_id = $1 AND e.type = 'metric.value' AND e.data->>'value' = r.value AND e.data->>'device_id' = r.device_id::text))`

// countFarmRows counts the readings and events stored for farm, and the
// readings paired with their own event, within DBTimeout.
func countFarmRows(ctx context.Context, databaseURL, farm string) (readings, events, paired int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("count stored rows: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err = conn.QueryRow(ctx, farmRowsSQL, farm).Scan(&readings, &events, &paired); err != nil {
		return 0, 0, 0, fmt.Errorf("count stored rows: %w", err)
	}
	return readings, events, paired, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
