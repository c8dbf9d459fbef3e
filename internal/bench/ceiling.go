package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ceilings are what the machine does without Furrow, measured in the same
// run as the ingest they are compared with.
type Ceilings struct {
	// HTTP is a minimal handler answering the same request with the same
	// kind of response: no credential, no limiter, no storage. When the
	// ingest measures it (IngestConfig.HTTPCeiling), it is measured in turns
	// with the ingest, so that both see the same machine.
	HTTP CeilingResult `json:"http"`
	// Database is the same rows as ingest stores (a reading, its outbox
	// event and the device's last-seen time), in batches, with no HTTP.
	Database CeilingResult `json:"database"`
}

// CeilingResult is one ceiling.
type CeilingResult struct {
	Count   int64         `json:"count"`
	Elapsed time.Duration `json:"-"`
	PerSec  float64       `json:"per_second"`
	Latency Summary       `json:"latency"`
	// CPU is the CPU seconds each process group used during the run.
	CPU map[string]float64 `json:"cpu_s,omitempty"`
	// SpeedUS is the median of the machine's speed sampled once a second
	// during the run (see speedSampler), in µs; more is slower.
	SpeedUS float64 `json:"machine_speed_us,omitempty"`
}

// httpCeiling is the machine's HTTP ceiling for Furrow's request: a
// minimal reading handler served on loopback in this process, which decodes
// the JSON body and answers 201 with a reading, as Furrow does, and nothing
// else; and the client that posts to it from concurrency connections.
type httpCeiling struct {
	srv         *http.Server
	url         string
	hc          *http.Client
	devices     []Device
	concurrency int
}

func startHTTPCeiling(concurrency int) (*httpCeiling, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("http ceiling: %w", err)
	}
	c := &httpCeiling{
		srv:         &http.Server{Handler: http.HandlerFunc(ceilingHandler), ReadHeaderTimeout: 5 * time.Second},
		url:         "http://" + ln.Addr().String(),
		hc:          loadClient(concurrency),
		devices:     make([]Device, 1000),
		concurrency: concurrency,
	}
	go func() { _ = c.srv.Serve(ln) }()
	for i := range c.devices {
		c.devices[i] = Device{ID: uuid.NewString(), Key: "fdk_ceiling"}
	}
	return c, nil
}

func (c *httpCeiling) close() {
	c.hc.CloseIdleConnections()
	_ = c.srv.Close()
}

// load posts to the server at full speed until p ends.
func (c *httpCeiling) load(ctx context.Context, p *pace) *tally {
	return runLoad(ctx, c.concurrency, p, func(ctx context.Context, s slot, t *tally) {
		began := time.Now()
		status, _, err := postReading(ctx, c.hc, c.url, c.devices[s.i%int64(len(c.devices))], strconv.FormatInt(s.i, 10))
		if err != nil || status != http.StatusCreated {
			t.failures++
			t.lastErr = cmpErr(err, status)
			return
		}
		t.latencies = append(t.latencies, s.since(began))
	})
}

// ceilingSlices adds up the slices of an HTTP ceiling measured in turns
// with the ingest.
type ceilingSlices struct {
	t       tally
	elapsed time.Duration
	cpu     map[string]float64
	speeds  []time.Duration
}

func newCeilingSlices() *ceilingSlices {
	return &ceilingSlices{t: tally{status: map[int]int64{}}}
}

// run measures one slice of d.
func (a *ceilingSlices) run(ctx context.Context, c *httpCeiling, d time.Duration) {
	meter, speed := startGroupCPU(), startSpeedSampler(speedInterval)
	p := newPace(d, 0)
	t := c.load(ctx, p)
	a.elapsed += time.Since(p.start)
	a.cpu = addCPU(a.cpu, meter.stop())
	a.speeds = append(a.speeds, speed.samples()...)
	a.t.merge(t)
}

func (a *ceilingSlices) result() (CeilingResult, error) {
	r, err := ceilingResult(&a.t, a.elapsed, a.cpu)
	r.SpeedUS = medianUS(a.speeds)
	return r, err
}

// addCPU adds the CPU seconds of each group in b to a.
func addCPU(a, b map[string]float64) map[string]float64 {
	if a == nil {
		a = map[string]float64{}
	}
	for g, s := range b {
		a[g] += s
	}
	return a
}

func cmpErr(err error, status int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("status %d", status)
}

// ceilingResult is the ceiling that t observed over elapsed, using cpu; an
// error when nothing succeeded.
func ceilingResult(t *tally, elapsed time.Duration, cpu map[string]float64) (CeilingResult, error) {
	r := CeilingResult{Count: int64(len(t.latencies)), Elapsed: elapsed, Latency: Summarize(t.latencies), CPU: cpu}
	r.PerSec = perSecond(r.Count, elapsed)
	if r.Count == 0 && t.lastErr != nil {
		return r, fmt.Errorf("ceiling: nothing succeeded: %w", t.lastErr)
	}
	return r, nil
}

// ceilingReading is the reading JSON Furrow reads and answers.
type ceilingReading struct {
	DeviceID  string          `json:"device_id"`
	MetricID  int32           `json:"metric_id"`
	Value     json.RawMessage `json:"value"`
	Timestamp int64           `json:"timestamp"`
}

func ceilingHandler(w http.ResponseWriter, r *http.Request) {
	var in ceilingReading
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, `{"error":"bad_request","reason":"Body is not JSON."}`, http.StatusBadRequest)
		return
	}
	in.Timestamp = time.Now().UnixMilli()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(in)
}

// ceilingBatch is the batch size of the database ceiling: that of Furrow's
// group commit at full load.
const ceilingBatch = 256

// DatabaseCeiling inserts readings with their metric.value events and
// last-seen updates in transactions of ceilingBatch rows, from writers
// connections, for d, on a scratch database beside databaseURL: what
// PostgreSQL alone does with Furrow's rows, no HTTP in between.
func DatabaseCeiling(ctx context.Context, databaseURL string, writers int, d time.Duration) (CeilingResult, error) {
	pool, farm, devices, done, err := seededScratch(ctx, "database ceiling", databaseURL, writers)
	if err != nil {
		return CeilingResult{}, err
	}
	defer done()
	// Each batch takes a share of the devices no other batch holds, as
	// Furrow's writers own disjoint devices, so batches never wait on each
	// other's row locks.
	shares := make(chan []uuid.UUID, writers)
	for w := range writers {
		shares <- devices[w*len(devices)/writers : (w+1)*len(devices)/writers]
	}
	meter := startGroupCPU()
	p := newPace(d, 0)
	t := runLoad(ctx, writers, p, func(ctx context.Context, s slot, t *tally) {
		began := time.Now()
		share := <-shares
		err := ceilingBatchTx(ctx, pool, farm, share, s.i)
		shares <- share
		if err != nil {
			t.failures++
			t.lastErr = err
			return
		}
		el := s.since(began)
		for range ceilingBatch {
			t.latencies = append(t.latencies, el)
		}
	})
	return ceilingResult(t, time.Since(p.start), meter.stop())
}

// ceilingBatchSQL writes what Furrow's group commit writes for a batch:
// the readings, their events and the devices' last-seen times.
const ceilingBatchSQL = `
WITH u AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::uuid[], $5::text[]) AS u(device_id, value, ts_ms, event_id, data)),
r AS (INSERT INTO readings (device_id, farm_id, metric_id, value, ts_ms) SELECT device_id, $6, 220, value, ts_ms FROM u),
e AS (INSERT INTO events (id, type, farm_id, occurred_at_ms, data) SELECT event_id, 'metric.value', $6, ts_ms, data::jsonb FROM u),
t AS (UPDATE devices d SET last_seen_ms = x.ts FROM (SELECT device_id, max(ts_ms) AS ts FROM u GROUP BY device_id ORDER BY device_id) x WHERE d.id = x.device_id)
SELECT 1`

// ceilingBatchTx writes batch i of the database ceiling in one
// transaction, within DBTimeout.
func ceilingBatchTx(ctx context.Context, pool *pgxpool.Pool, farm uuid.UUID, devices []uuid.UUID, i int64) error {
	ctx, cancel := context.WithTimeout(ctx, DBTimeout)
	defer cancel()
	ts := time.Now().UnixMilli()
	ds, values, stamps, events, data := make([]uuid.UUID, ceilingBatch), make([]string, ceilingBatch),
		make([]int64, ceilingBatch), make([]uuid.UUID, ceilingBatch), make([]string, ceilingBatch)
	for j := range ceilingBatch {
		n := i*ceilingBatch + int64(j)
		ds[j], values[j], stamps[j], events[j] = devices[n%int64(len(devices))], strconv.FormatInt(n, 10), ts, uuid.New()
		b, _ := json.Marshal(map[string]any{"device_id": ds[j], "metric_id": 220, "value": values[j], "timestamp": ts})
		data[j] = string(b)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, ceilingBatchSQL, ds, values, stamps, events, data, farm)
		return err
	})
}
