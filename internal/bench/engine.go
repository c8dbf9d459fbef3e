package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/sender"
)

// EngineConfig sets up the bare engine's side of a run: Temporal itself
// delivering to the receiver, with none of Furrow's work around it.
type EngineConfig struct {
	// TemporalAddress and Namespace name the Temporal that Furrow under
	// test uses, so that both sides measure the same engine.
	TemporalAddress string
	Namespace       string
	Rate            float64
	Drain           time.Duration
	Concurrency     int
	Logger          *slog.Logger
}

// EngineResult is what the bare engine's turns measured. Latency runs from
// the start call to the receiver's first sight of the event, the engine's
// counterpart of Furrow's 201-to-receiver latency; StartLatency from each
// start's scheduled time (see Pacing) to the call's return.
type EngineResult struct {
	Started      int64   `json:"started"`
	StartErrors  int64   `json:"start_errors"`
	StartLatency Summary `json:"start_latency"`
	side
}

// engineWorkflowName is the bare engine's workflow type.
const engineWorkflowName = "FurrowBenchEngine"

// engineInput is what the bare engine's workflow is started with: the
// event to deliver, named, not carried, as Furrow's deliveries are.
type engineInput struct {
	EventID string
	Value   string
	AtMs    int64
}

// engine measures the bare engine on a Temporal, turn by turn: at the
// offered rate it starts, eagerly, a workflow that makes one local activity
// POSTing a signed event to the receiver, the shape of a Furrow delivery's
// first attempt, on a task queue of its own served by a worker in this
// process.
type engine struct {
	cfg   EngineConfig
	c     client.Client
	w     worker.Worker
	queue string
	run   string // names this run's workflows
	rcv   *Receiver
}

// startEngine connects to cfg's Temporal and starts the engine's worker,
// whose deliveries to rcv are signed with secret. Close the engine after
// its turns.
func startEngine(cfg EngineConfig, rcv *Receiver, secret string) (*engine, error) {
	post, err := newEnginePoster(rcv, secret)
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.Namespace,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, fmt.Errorf("engine: connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	e := &engine{cfg: cfg, c: c, queue: "furrow-bench-engine-" + randomHex(4), run: randomHex(4), rcv: rcv}
	e.w = worker.New(c, e.queue, worker.Options{})
	e.w.RegisterWorkflowWithOptions(post.workflow, workflow.RegisterOptions{Name: engineWorkflowName})
	if err := e.w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("engine: start worker: %w", err)
	}
	return e, nil
}

// close stops the worker and the client.
func (e *engine) close() {
	e.w.Stop()
	e.c.Close()
}

// turn offers the load for d, its readings' values tagged tag, and gathers
// the figures.
func (e *engine) turn(ctx context.Context, tag string, d time.Duration) EngineResult {
	cfg, rcv := e.cfg, e.rcv
	if cfg.Logger != nil {
		cfg.Logger.Info("bare engine turn", "turn", tag, "temporal", cfg.TemporalAddress, "namespace", cfg.Namespace, "task_queue", e.queue, "rate", cfg.Rate, "duration", d)
	}
	var (
		mu      sync.Mutex
		started = map[string]time.Time{} // value -> start call made
	)
	m := startTurn(ctx, rcv, tag, d, cfg.Rate, "", "")
	tl := runLoad(ctx, cfg.Concurrency, m.pace, func(ctx context.Context, s slot, tl *tally) {
		value := turnValue(tag, s.i)
		in := engineInput{EventID: furrow.NewEventID(), Value: value}
		opts := client.StartWorkflowOptions{
			ID: "bench-engine/" + e.run + "/" + value, TaskQueue: e.queue, EnableEagerStart: true,
		}
		began := time.Now()
		in.AtMs = began.UnixMilli()
		mu.Lock()
		started[value] = began
		mu.Unlock()
		if _, err := e.c.ExecuteWorkflow(ctx, opts, engineWorkflowName, in); err != nil {
			tl.failures++
			tl.lastErr = err
			mu.Lock()
			delete(started, value)
			mu.Unlock()
			return
		}
		tl.latencies = append(tl.latencies, s.since(began))
		m.sent.Add(1)
	})
	return EngineResult{Started: m.sent.Load(), StartErrors: tl.failures, side: m.end(ctx, cfg.Drain, started, tl)}
}

// enginePoster is the bare engine's delivery: the event's body signed in
// both schemes, as Furrow sends it, POSTed to the receiver.
type enginePoster struct {
	url    string
	secret string
	farm   uuid.UUID
	http   *http.Client
}

func newEnginePoster(rcv *Receiver, secret string) (*enginePoster, error) {
	pem, err := os.ReadFile(rcv.CAFile)
	if err != nil {
		return nil, fmt.Errorf("engine: receiver certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("engine: receiver certificate %s holds no PEM certificate", rcv.CAFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64}
	return &enginePoster{url: rcv.URL, secret: secret, farm: uuid.New(), http: &http.Client{Transport: tr, Timeout: furrow.DeliveryTimeout}}, nil
}

// workflow makes the one local activity, retried like Furrow's first
// attempt would be if the receiver did not answer.
func (p *enginePoster) workflow(ctx workflow.Context, in engineInput) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: furrow.DeliveryTimeout + 5*time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	return workflow.ExecuteLocalActivity(ctx, p.post, in).Get(ctx, nil)
}

// post sends the event named by in and fails unless the receiver answers
// 2xx.
func (p *enginePoster) post(ctx context.Context, in engineInput) error {
	e := furrow.Event{ID: in.EventID, Type: furrow.EventMetricValue, FarmID: p.farm, OccurredAtMs: in.AtMs}
	data := furrow.MetricValueData{DeviceID: p.farm, MetricID: 220, Value: in.Value, Timestamp: in.AtMs}
	e.Data = data.AppendJSON(nil)
	body, err := json.Marshal(e) // as activities.Deliver encodes the event
	if err != nil {
		return err
	}
	d := sender.Delivery{URL: p.url, Secret: p.secret, EventID: e.ID, DeliveryID: uuid.NewString(), At: time.Now(), Body: body}
	req, err := d.Request(ctx)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
