package bench

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Print writes r for people.
func (r BaselineResult) Print(w io.Writer) {
	fmt.Fprintf(w, "baseline: %d transactions in %.1fs = %.0f tx/s (reading + outbox row per transaction), %d failed\n",
		r.Transactions, r.Elapsed.Seconds(), r.TPS, r.Failures)
	fmt.Fprintf(w, "  latency %s\n", r.Latency)
}

// Print writes r for people.
func (r IngestResult) Print(w io.Writer) {
	fmt.Fprintf(w, "ingest: %d answers in %.1fs = %.0f req/s; 201: %.0f/s\n", r.Requests, r.Elapsed.Seconds(), r.RPS, r.CreatedRPS)
	fmt.Fprintf(w, "  latency %s%s\n", r.Latency, latencyFrom(r.Pacing))
	fmt.Fprintf(w, "  status %s; no answer: %d\n", statusLine(r.Status), r.Failures)
	printPacing(w, "  ", r.Pacing, r.Unsent)
	if wu := r.Warmup; wu != nil {
		fmt.Fprintf(w, "  warm-up before, not in the figures above: %d answers in %.1fs, latency %s, status %s; no answer: %d\n",
			wu.Requests, wu.Elapsed.Seconds(), wu.Latency, statusLine(wu.Status), wu.Failures)
		printPacing(w, "    warm-up ", wu.Pacing, wu.Unsent)
	}
	fmt.Fprintf(w, "  stored: %d readings, %d metric.value events, %d readings with their own event, for %d created\n",
		r.Stored, r.Events, r.Paired, r.CreatedInAll())
	if r.ServerCPU > 0 && r.Requests > 0 {
		fmt.Fprintf(w, "  server CPU: %.1fs = %.2f ms per request\n", r.ServerCPU, 1000*r.ServerCPU/float64(r.Requests))
	}
	if r.Memory != nil {
		fmt.Fprintf(w, "  server memory: rss %s (anonymous %s), peak %s\n", mib(r.Memory.RSS), mib(r.Memory.Anon), mib(r.Memory.Peak))
	}
	if r.SpeedUS > 0 {
		fmt.Fprintf(w, "  machine speed (median of a sample a second, more is slower): %.0f µs\n", r.SpeedUS)
	}
	printRedisCommands(w, r.RedisCommands, r.Created())
	r.LeftBehind.print(w)
}

// latencyFrom says where a run's latencies start: a paced run's from each
// request's scheduled time.
func latencyFrom(p *Pacing) string {
	if p == nil {
		return " (from each request's send)"
	}
	return " (from each request's scheduled time)"
}

// printPacing writes, for a paced run, the rate it offered and how late
// it sent, with a warning when it offered less than asked; and the
// requests it never sent.
func printPacing(w io.Writer, indent string, p *Pacing, unsent int64) {
	if p != nil {
		fmt.Fprintf(w, "%soffered %.0f/s of the %.0f/s asked; sent late by (the tool's own lateness, in the latency above) p99 %.1fms, max %.1fms\n",
			indent, p.Offered, p.Rate, ms(p.SendLag.P99), ms(p.SendLag.Max))
		if p.Short {
			fmt.Fprintf(w, "%sWARNING: the load offered %.0f%% of the rate asked: the figures describe a lighter load (more --concurrency, or a less busy machine)\n",
				indent, 100*ratio(p.Offered, p.Rate))
		}
	}
	if unsent > 0 {
		fmt.Fprintf(w, "%sWARNING: %d scheduled requests were never sent: %s\n", indent, unsent, unsentWhy)
	}
}

// unsentWhy says why a run leaves scheduled requests unsent.
var unsentWhy = fmt.Sprintf("none is sent later than %s after the run's end, and every connection was still waiting (a server slow to answer, or too few --concurrency)", PaceGrace)

// Check reports a broken guarantee: a 5xx, a request without an answer, a
// scheduled request never sent, no 201 at all in the measured run, or 201s
// whose readings and events are not stored exactly, each reading with its
// own event.
func (r IngestResult) Check() error {
	created := r.CreatedInAll()
	var errs []error
	if n := r.ServerErrors(); n > 0 {
		errs = append(errs, fmt.Errorf("ingest: %d server errors", n))
	}
	if f := r.failures(); f > 0 {
		errs = append(errs, fmt.Errorf("ingest: %d requests got no answer, last: %s", f, r.lastFailure()))
	}
	if n := r.unsent(); n > 0 {
		errs = append(errs, fmt.Errorf("ingest: %d scheduled requests were never sent (warm-up included): %s", n, unsentWhy))
	}
	if r.Created() == 0 {
		errs = append(errs, fmt.Errorf("ingest: no reading was created in the measured run (status %s)", statusLine(r.Status)))
	}
	if r.Stored != created || r.Events != created || r.Paired != created {
		errs = append(errs, fmt.Errorf("ingest: %d readings created but %d stored with %d events, %d readings with their own event", created, r.Stored, r.Events, r.Paired))
	}
	return errors.Join(errs...)
}

// failures returns the requests without an answer, warm-up included.
func (r IngestResult) failures() int64 {
	if r.Warmup == nil {
		return r.Failures
	}
	return r.Failures + r.Warmup.Failures
}

// unsent returns the requests never sent, warm-up included.
func (r IngestResult) unsent() int64 {
	if r.Warmup == nil {
		return r.Unsent
	}
	return r.Unsent + r.Warmup.Unsent
}

// lastFailure is the measured run's last failure, else the warm-up's.
func (r IngestResult) lastFailure() string {
	if r.LastFailure == "" && r.Warmup != nil {
		return r.Warmup.LastFailure + " (in the warm-up)"
	}
	return r.LastFailure
}

// Print writes r for people.
func (r DeliveryResult) Print(w io.Writer) {
	printMachine(w, r.Load, r.Settings)
	r.Speed.Print(w)
	fmt.Fprintf(w, "delivery: %d readings accepted; status %s; no answer: %d\n", r.Accepted, statusLine(r.Status), r.Failures)
	fmt.Fprintf(w, "  POST latency %s%s\n", r.PostLatency, latencyFrom(r.Pacing))
	printPacing(w, "  ", r.Pacing, r.Unsent)
	fmt.Fprintf(w, "  201 -> receiver latency %s\n", r.Latency)
	fmt.Fprintf(w, "  delivered during load: %d = %.1f/s; delivered in all: %d after %.1fs of drain; missing %d, duplicates %d, rejected %d\n",
		r.InLoad, r.PerSecond, r.Delivered, r.DrainTime.Seconds(), r.Missing, r.Duplicates, r.Rejected)
	b := r.Backlog
	fmt.Fprintf(w, "  backlog (accepted, not yet received): %d at a quarter of the run, %d at the end, max %d; slope %+.2f/s; grew: %v\n",
		b.StartOutstanding, b.EndOutstanding, b.MaxOutstanding, b.Slope, b.Grew)
	printWhy(w, b)
	if len(b.Samples) > 0 {
		last := b.Samples[len(b.Samples)-1]
		fmt.Fprintf(w, "  outbox rows not yet dispatched at the end of the load: %d\n", last.Outbox)
	}
	if r.ServerCPU > 0 && r.Delivered > 0 {
		fmt.Fprintf(w, "  server CPU: %.1fs = %.2f ms per reading delivered\n", r.ServerCPU, 1000*r.ServerCPU/float64(r.Delivered))
	}
	if r.Memory != nil {
		fmt.Fprintf(w, "  server memory: rss %s (anonymous %s), peak %s\n", mib(r.Memory.RSS), mib(r.Memory.Anon), mib(r.Memory.Peak))
	}
	r.Cost.Print(w, r.Delivered)
	if r.Engine != nil {
		r.Engine.Print(w)
		fmt.Fprintf(w, "furrow vs bare engine, %d turns each: delivered rate %.2f of the engine's; latency p50 %.2fx, p99 %.2fx the engine's; machine CPU per delivery %.2fx the engine's (turn by turn: %s)\n",
			r.Turns, r.VsEngine.Rate, r.VsEngine.P50, r.VsEngine.P99, r.VsEngine.CPU, listOf("%.2fx", r.VsEngine.CPUByTurn))
		if c := r.VsEngine.TurnCost; c != nil {
			fmt.Fprintf(w, "  machine CPU per delivery turn by turn, in the order each side ran them: Furrow %s ms; the engine %s ms\n",
				listOf("%.2f", c.Furrow), listOf("%.2f", c.Engine))
		}
		printExtra(w, r.VsEngine.Extra)
		if r.VsEngine.RatesDiffer {
			fmt.Fprintf(w, "  the runs delivered at different rates (Furrow %.1f/s, the engine %.1f/s), and a delivery costs less CPU at a higher rate: compare the CPU at an offered rate both keep up with\n",
				r.PerSecond, r.Engine.PerSecond)
		}
	}
	r.LeftBehind.print(w)
}

// Print writes e for people.
func (e EngineResult) Print(w io.Writer) {
	fmt.Fprintf(w, "bare engine (same Temporal, same rate, in turns with Furrow; one local activity POSTing, eager start): %d started, %d start errors\n", e.Started, e.StartErrors)
	fmt.Fprintf(w, "  start call latency %s%s\n", e.StartLatency, latencyFrom(e.Pacing))
	printPacing(w, "  ", e.Pacing, e.Unsent)
	fmt.Fprintf(w, "  start -> receiver latency %s\n", e.Latency)
	fmt.Fprintf(w, "  delivered during load: %d = %.1f/s; delivered in all: %d after %.1fs of drain; missing %d, rejected %d\n",
		e.InLoad, e.PerSecond, e.Delivered, e.DrainTime.Seconds(), e.Missing, e.Rejected)
	b := e.Backlog
	fmt.Fprintf(w, "  backlog (started, not yet received): %d at a quarter of the run, %d at the end, max %d; slope %+.2f/s; grew: %v\n",
		b.StartOutstanding, b.EndOutstanding, b.MaxOutstanding, b.Slope, b.Grew)
	printWhy(w, b)
	e.Cost.Print(w, e.Delivered)
}

// Check reports a broken guarantee: a 5xx, a request without an answer, a
// scheduled request never sent, no reading accepted at all, an accepted
// reading whose event never arrived, or a delivery the receiver could not
// verify.
func (r DeliveryResult) Check() error {
	for code, n := range r.Status {
		if strings.HasPrefix(code, "5") && n > 0 {
			return fmt.Errorf("delivery: %d answers with status %s", n, code)
		}
	}
	switch {
	case r.Failures > 0:
		return fmt.Errorf("delivery: %d requests got no answer", r.Failures)
	case r.Unsent > 0:
		return fmt.Errorf("delivery: %d scheduled readings were never sent: %s", r.Unsent, unsentWhy)
	case r.Accepted == 0:
		return fmt.Errorf("delivery: no reading was accepted (status %s)", statusLine(r.Status))
	case r.Missing > 0:
		return fmt.Errorf("delivery: %d accepted readings were not delivered within the drain time", r.Missing)
	case r.Rejected > 0:
		return fmt.Errorf("delivery: the receiver rejected %d deliveries (bad signature or body)", r.Rejected)
	}
	return nil
}

// String formats s in milliseconds.
func (s Summary) String() string {
	return fmt.Sprintf("n=%d p50=%.1fms p95=%.1fms p99=%.1fms max=%.1fms", s.Count, ms(s.P50), ms(s.P95), ms(s.P99), ms(s.Max))
}

func statusLine(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// listOf formats each of fs with format, comma-separated.
func listOf(format string, fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf(format, f)
	}
	return strings.Join(parts, ", ")
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Print writes c for people.
func (c Ceilings) Print(w io.Writer) {
	fmt.Fprintf(w, "ceiling, HTTP (minimal handler, same request, no auth or storage; in turns with the ingest): %.0f req/s, latency %s\n", c.HTTP.PerSec, c.HTTP.Latency)
	fmt.Fprintf(w, "ceiling, database (same rows in batches of %d, no HTTP): %.0f readings/s\n", ceilingBatch, c.Database.PerSec)
}

// Against returns the stored readings per second of r as fractions of the
// HTTP and the database ceilings.
func (c Ceilings) Against(r IngestResult) (http, database float64) {
	return ratio(r.CreatedRPS, c.HTTP.PerSec), ratio(r.CreatedRPS, c.Database.PerSec)
}

// PrintAgainst writes how r compares with the ceilings c: stored readings
// per second as a fraction of each, and the CPU per reading of each
// process group.
func (c Ceilings) PrintAgainst(w io.Writer, r IngestResult) {
	h, d := c.Against(r)
	fmt.Fprintf(w, "against the machine: %.2f of the HTTP ceiling, %.2f of the database ceiling\n", h, d)
	if c.HTTP.SpeedUS > 0 {
		fmt.Fprintf(w, "  machine speed during the HTTP ceiling: %.0f µs\n", c.HTTP.SpeedUS)
		printSpeedGap(w, r.SpeedUS, c.HTTP.SpeedUS, "the ingest", "the HTTP ceiling", "the ratio compares")
	}
	if created := r.Created(); created > 0 && len(r.CPU) > 0 {
		fmt.Fprintf(w, "  CPU per stored reading:")
		var service float64
		for _, g := range slices.Sorted(maps.Keys(r.CPU)) {
			fmt.Fprintf(w, " %s %.3f ms;", g, 1000*r.CPU[g]/float64(created))
			if g != "bench" {
				service += r.CPU[g]
			}
		}
		fmt.Fprintf(w, " service (all but bench) %.3f ms\n", 1000*service/float64(created))
	}
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// limitOf says, when b grew or lagged, what held the run back, judged by
// c, the run's cost over its delivered events; "" when b kept up.
func limitOf(b Backlog, c Cost, delivered int64) string {
	if !b.Grew && !b.Lagged {
		return ""
	}
	return c.why(delivered, b.Offered)
}

// printWhy writes b's limit, when it has one.
func printWhy(w io.Writer, b Backlog) {
	switch {
	case b.Limit == "":
	case b.Grew:
		fmt.Fprintf(w, "  the backlog grew; the limit was %s\n", b.Limit)
	default:
		fmt.Fprintf(w, "  the backlog did not grow but reached %d, %.1f s of the offered rate; the limit was %s\n",
			b.MaxOutstanding, ratio(float64(b.MaxOutstanding), b.Offered), b.Limit)
	}
}
