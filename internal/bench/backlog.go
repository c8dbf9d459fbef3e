package bench

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Backlog tells whether deliveries kept up with the load. Outstanding is
// accepted readings whose event has not reached the receiver; Outbox is the
// farm's events not yet handed to Temporal.
type Backlog struct {
	Samples          []Sample `json:"samples"`
	StartOutstanding int64    `json:"start_outstanding"` // at a quarter of the run
	EndOutstanding   int64    `json:"end_outstanding"`
	MaxOutstanding   int64    `json:"max_outstanding"`
	// Slope is the least-squares growth of Outstanding per second over the
	// last three quarters of the run.
	Slope float64 `json:"slope_per_second"`
	// Grew is true when Slope exceeds 5% of the offered rate (and one
	// event per second): deliveries were falling behind.
	Grew bool `json:"grew"`
	// Lagged is true when the backlog did not grow but at its largest held
	// more than lagSeconds of the offered rate (and more than lagEvents):
	// deliveries kept pace, but that far behind at some point, which the
	// latency's tail shows.
	Lagged bool `json:"lagged"`
	// Offered is the rate the run offered, per second.
	Offered float64 `json:"offered_per_second"`
	// Limit says, when the backlog grew or lagged, what held the run back:
	// the machine's CPU or not (see limitOf); empty otherwise.
	Limit string `json:"limit,omitempty"`
}

// Sample is the backlog at one moment of the run.
type Sample struct {
	AtSeconds   float64 `json:"at_s"`
	Outstanding int64   `json:"outstanding"`
	Outbox      int64   `json:"outbox"` // -1 when it could not be counted
}

// sampler records a Sample every second until stopped; without a
// databaseURL it counts no outbox (Outbox -1).
type sampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	samples []Sample
}

// startSampler samples until stopped; its connection and each count are
// bounded by meterTimeout, so that a silent PostgreSQL leaves the outbox
// uncounted (-1) instead of holding the samples.
func startSampler(ctx context.Context, databaseURL, farm string, start time.Time, outstanding func() int64) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		conn := connectWithin(ctx, databaseURL)
		if conn != nil {
			defer conn.Close(context.Background())
		}
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			smp := Sample{AtSeconds: time.Since(start).Seconds(), Outstanding: outstanding(), Outbox: -1}
			if conn != nil {
				smp.Outbox = countOutbox(ctx, conn, farm)
			}
			s.samples = append(s.samples, smp)
		}
	}()
	return s
}

// connectWithin connects to databaseURL within meterTimeout; nil without
// a databaseURL or on an error.
func connectWithin(ctx context.Context, databaseURL string) *pgx.Conn {
	if databaseURL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, meterTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil
	}
	return conn
}

// countOutbox counts the farm's events not yet dispatched within
// meterTimeout; -1 when it could not.
func countOutbox(ctx context.Context, conn *pgx.Conn, farm string) int64 {
	ctx, cancel := context.WithTimeout(ctx, meterTimeout)
	defer cancel()
	n := int64(-1)
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM events WHERE farm_id = $1 AND dispatched_at_ms IS NULL", farm).Scan(&n); err != nil {
		return -1
	}
	return n
}

func (s *sampler) stop() []Sample {
	s.cancel()
	<-s.done
	return s.samples
}

// analyse summarises samples of a run of d at rate per second.
func analyse(samples []Sample, d time.Duration, rate float64) Backlog {
	b := Backlog{Samples: samples, Offered: rate}
	var xs, ys []float64
	for _, s := range samples {
		b.MaxOutstanding = max(b.MaxOutstanding, s.Outstanding)
		if s.AtSeconds < d.Seconds()/4 {
			continue
		}
		if len(xs) == 0 {
			b.StartOutstanding = s.Outstanding
		}
		xs, ys = append(xs, s.AtSeconds), append(ys, float64(s.Outstanding))
		b.EndOutstanding = s.Outstanding
	}
	b.Slope = slope(xs, ys)
	b.Grew = b.Slope > max(1, 0.05*rate)
	b.Lagged = !b.Grew && rate > 0 && float64(b.MaxOutstanding) > max(lagEvents, lagSeconds*rate)
	return b
}

const (
	// lagSeconds is the backlog, in seconds of the offered rate, that
	// counts as lagging: the newest events then wait about that long, and
	// the latency's p99, which a sample a second misses, longer still
	// (1.3 to 1.7 times as long in measured runs), near the one second a
	// delivery's p99 is held to.
	lagSeconds = 0.5
	// lagEvents is the least backlog that counts as lagging at any rate:
	// a handful of events in flight is the pipeline, not a delay.
	lagEvents = 10
)

// slope is the least-squares slope of ys over xs; zero with fewer than
// two points.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
		sxx, sxy = sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}
