package bench

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// A delivery run measures the bare engine and Furrow in turns, each turn
// a slice of the run's duration with its own drain and cost, in the order
// engine, Furrow, Furrow, engine, engine, Furrow, ...: these machines'
// speed drifts within minutes, and a drift then weighs on both sides
// alike instead of on whichever ran second. With an even number of turns
// a steady drift cancels out. Each side's figures are its turns' together.

// turnOrder returns, for turns turns a side, which side runs in each slot:
// true for the engine.
func turnOrder(turns int) []bool {
	order := make([]bool, 0, 2*turns)
	for k := range turns {
		order = append(order, k%2 == 0, k%2 == 1)
	}
	return order
}

// rawTurns is what a side's turns measured before it is summarised: the
// latencies of its requests and of its deliveries, how long its loads
// lasted, the machine's speed samples, and each turn's backlog and
// machine CPU per delivery.
type rawTurns struct {
	post, delivery, speed []time.Duration
	load                  time.Duration
	backlogs              []Backlog
	cpu                   []float64 // machine CPU seconds per delivery
	// sched is the schedule's figures of the turns' loads (send lags,
	// span and unsent slots) at rate per second.
	sched tally
	rate  float64
}

// add appends o's turns to r's.
func (r *rawTurns) add(o rawTurns) {
	r.sched.merge(&o.sched)
	r.rate = max(r.rate, o.rate)
	r.post = append(r.post, o.post...)
	r.delivery = append(r.delivery, o.delivery...)
	r.speed = append(r.speed, o.speed...)
	r.load += o.load
	r.backlogs = append(r.backlogs, o.backlogs...)
	r.cpu = append(r.cpu, o.cpu...)
}

// ratios returns ours[k] over theirs[k] for each k both have.
func ratios(ours, theirs []float64) []float64 {
	out := make([]float64, min(len(ours), len(theirs)))
	for k := range out {
		out[k] = ratio(ours[k], theirs[k])
	}
	return out
}

// side is what one side of a run, Furrow or the bare engine, delivered at
// the receiver over its turns, and what that cost.
type side struct {
	Latency   Summary       `json:"delivery_latency"`
	Delivered int64         `json:"delivered"`
	InLoad    int64         `json:"delivered_during_load"`
	PerSecond float64       `json:"deliveries_per_second"`
	Missing   int64         `json:"missing"`
	Rejected  int64         `json:"rejected"`
	DrainTime time.Duration `json:"-"`
	Backlog   Backlog       `json:"backlog"`
	// Cost is what the side's turns cost the machine, loads and drains.
	Cost Cost `json:"cost"`
	// Pacing is how well the side's loads kept their schedule; the
	// latency of its requests runs from each one's scheduled time.
	Pacing *Pacing `json:"pacing,omitempty"`
	// Unsent counts the requests scheduled but never sent, the turn's end
	// and PaceGrace having passed.
	Unsent int64 `json:"unsent"`
	raw    rawTurns
}

// add folds the side's turn t, its cost measured, into s.
func (s *side) add(t side) {
	t.raw.cpu = []float64{ratio(t.Cost.CPU["machine"], float64(t.Delivered))}
	s.Delivered += t.Delivered
	s.InLoad += t.InLoad
	s.Missing += t.Missing
	s.Rejected += t.Rejected
	s.DrainTime += t.DrainTime
	s.Cost = s.Cost.plus(t.Cost)
	s.raw.add(t.raw)
}

// finish summarises the side's turns: the delivery latency, the rate
// during the loads and the backlog with the limit it met; it returns the
// latency of the requests.
func (s *side) finish() Summary {
	s.Latency, s.PerSecond = Summarize(s.raw.delivery), perSecond(s.InLoad, s.raw.load)
	s.Backlog = joinBacklogs(s.raw.backlogs)
	s.Backlog.Limit = limitOf(s.Backlog, s.Cost, s.Delivered)
	s.Pacing, s.Unsent = s.raw.sched.pacing(s.raw.rate), s.raw.sched.unsent
	return Summarize(s.raw.post)
}

// add folds the turn t into r; call finish after the last.
func (r *DeliveryResult) add(t DeliveryResult) {
	r.Accepted += t.Accepted
	r.Failures += t.Failures
	if r.Status == nil {
		r.Status = map[string]int64{}
	}
	for code, n := range t.Status {
		r.Status[code] += n
	}
	r.ServerCPU += t.ServerCPU
	r.Turns++
	r.side.add(t.side)
}

// finish summarises r's turns.
func (r *DeliveryResult) finish() { r.PostLatency = r.side.finish() }

// add folds the turn t into e; call finish after the last.
func (e *EngineResult) add(t EngineResult) {
	e.Started += t.Started
	e.StartErrors += t.StartErrors
	e.side.add(t.side)
}

// finish summarises e's turns.
func (e *EngineResult) finish() { e.StartLatency = e.side.finish() }

// joinBacklogs is the backlog of a side's turns: their samples one after
// the other (each turn's times from the start of the side's first), the
// first turn's outstanding at a quarter and the last's at the end, the
// largest, and the turns' mean slope; it grew when any turn grew, and
// lagged when none grew and one lagged.
func joinBacklogs(bs []Backlog) Backlog {
	if len(bs) == 0 {
		return Backlog{}
	}
	j := Backlog{Offered: bs[0].Offered, StartOutstanding: bs[0].StartOutstanding, EndOutstanding: bs[len(bs)-1].EndOutstanding}
	var offset float64
	for _, b := range bs {
		var last float64
		for _, s := range b.Samples {
			s.AtSeconds += offset
			last = s.AtSeconds
			j.Samples = append(j.Samples, s)
		}
		offset = max(offset, last)
		j.MaxOutstanding = max(j.MaxOutstanding, b.MaxOutstanding)
		j.Slope += b.Slope / float64(len(bs))
		j.Grew = j.Grew || b.Grew
		j.Lagged = j.Lagged || b.Lagged
	}
	j.Lagged = j.Lagged && !j.Grew
	return j
}

// plus returns the cost of c's run and o's together: CPU seconds and wall
// time add up, and so do the statements' calls and execution time, the
// costliest statements chosen again from both.
func (c Cost) plus(o Cost) Cost {
	if c.CPU == nil {
		return o
	}
	sum := Cost{
		CPU: addSeconds(c.CPU, o.CPU), Postgres: addSeconds(c.Postgres, o.Postgres),
		FurrowDatabase: cmp.Or(c.FurrowDatabase, o.FurrowDatabase),
		Steal:          c.Steal + o.Steal,
		Wall:           c.Wall + o.Wall, Cores: max(c.Cores, o.Cores),
	}
	dbs := map[string]DatabaseCost{}
	for _, d := range append(slices.Clone(c.Databases), o.Databases...) {
		s := dbs[d.Database]
		dbs[d.Database] = DatabaseCost{Database: d.Database, Calls: s.Calls + d.Calls, ExecMs: s.ExecMs + d.ExecMs}
	}
	for _, k := range slices.Sorted(maps.Keys(dbs)) {
		sum.Databases = append(sum.Databases, dbs[k])
	}
	type key struct{ db, query string }
	stmts := map[key]StatementCost{}
	for _, s := range append(slices.Clone(c.Statements), o.Statements...) {
		k := key{s.Database, s.Query}
		t := stmts[k]
		stmts[k] = StatementCost{Database: s.Database, Query: s.Query, Calls: t.Calls + s.Calls, ExecMs: t.ExecMs + s.ExecMs}
	}
	sum.Statements = slices.SortedFunc(maps.Values(stmts), func(a, b StatementCost) int {
		return cmp.Or(cmp.Compare(b.ExecMs, a.ExecMs), cmp.Compare(a.Query, b.Query))
	})
	sum.Statements = sum.Statements[:min(len(sum.Statements), topStatements)]
	return sum
}

// addSeconds returns a map of a's and b's figures added key by key; nil
// when both are.
func addSeconds(a, b map[string]float64) map[string]float64 {
	if a == nil && b == nil {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]float64{}
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

// turnMeter measures one side's turn at the receiver: the backlog while
// the turn's load runs, then its drain and what arrived. The load adds to
// sent each request whose event must arrive.
type turnMeter struct {
	rcv      *Receiver
	tag      string
	rejected int64 // the receiver's rejections before the turn
	pace     *pace
	sampler  *sampler
	sent     atomic.Int64
}

// startTurn paces a turn tagged tag of d at rate and samples its backlog,
// the outbox's too when databaseURL and farm are given.
func startTurn(ctx context.Context, rcv *Receiver, tag string, d time.Duration, rate float64, databaseURL, farm string) *turnMeter {
	m := &turnMeter{rcv: rcv, tag: tag, rejected: rcv.rejections(), pace: newPace(d, rate)}
	m.sampler = startSampler(ctx, databaseURL, farm, m.pace.start, func() int64 { return m.sent.Load() - rcv.received(tag) })
	return m
}

// end waits up to drain for the turn's events and returns the side's
// figures of the turn; at holds when each event's request was made or
// answered, tl the turn's load.
func (m *turnMeter) end(ctx context.Context, drain time.Duration, at map[string]time.Time, tl *tally) side {
	loadEnd := time.Now()
	samples := m.sampler.stop()
	s := side{DrainTime: m.drain(ctx, drain)}
	lat, missing, inLoad := m.rcv.arrivalsOf(at, loadEnd)
	s.Missing, s.InLoad = missing, inLoad
	s.Delivered, s.Rejected = m.rcv.received(m.tag), m.rcv.rejections()-m.rejected
	d := m.pace.end.Sub(m.pace.start)
	s.raw = rawTurns{post: tl.latencies, delivery: lat, load: loadEnd.Sub(m.pace.start), backlogs: []Backlog{analyse(samples, d, m.pace.rate)},
		sched: tally{lags: tl.lags, span: tl.span, unsent: tl.unsent}, rate: m.pace.rate}
	return s
}

// drain waits until every sent event of the turn has arrived or limit
// passes, and returns how long it waited.
func (m *turnMeter) drain(ctx context.Context, limit time.Duration) time.Duration {
	began := time.Now()
	for m.rcv.received(m.tag) < m.sent.Load() && time.Since(began) < limit && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(began)
}
