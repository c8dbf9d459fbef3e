package bench

import (
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSummarizeNearestRank(t *testing.T) {
	ds := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(ds)
	want := Summary{Count: 100, P50: 50 * time.Millisecond, P95: 95 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if s != want {
		t.Fatalf("Summarize = %+v, want %+v", s, want)
	}
	if one := Summarize([]time.Duration{7}); one.P50 != 7 || one.P99 != 7 || one.Max != 7 {
		t.Errorf("one sample: %+v", one)
	}
	if empty := Summarize(nil); empty != (Summary{}) {
		t.Errorf("no samples: %+v", empty)
	}
}

func TestAnalyseBacklog(t *testing.T) {
	steady, growing := make([]Sample, 0, 20), make([]Sample, 0, 20)
	for i := 1; i <= 20; i++ {
		steady = append(steady, Sample{AtSeconds: float64(i), Outstanding: int64(5 + i%2)})
		growing = append(growing, Sample{AtSeconds: float64(i), Outstanding: int64(10 * i)})
	}
	if b := analyse(steady, 20*time.Second, 50); b.Grew || b.Lagged || b.MaxOutstanding != 6 {
		t.Errorf("steady backlog judged %+v", b)
	}
	b := analyse(growing, 20*time.Second, 50)
	if !b.Grew || b.Lagged || b.Slope < 9.9 || b.Slope > 10.1 || b.StartOutstanding != 50 || b.EndOutstanding != 200 {
		t.Errorf("growing backlog judged %+v", b)
	}
}

// TestAnalyseBacklogThatCaughtUp: a backlog that rose to more than half a
// second of the offered rate and then drained did not grow, but lagged;
// one that stayed under half a second did neither.
func TestAnalyseBacklogThatCaughtUp(t *testing.T) {
	wave := func(peak int) []Sample {
		var s []Sample
		for i := 1; i <= 30; i++ {
			// Up to peak by the eighth second, down to a few by the end.
			n := peak * min(i, 8) / 8
			if i > 8 {
				n = max(3, peak-(i-8)*peak/20)
			}
			s = append(s, Sample{AtSeconds: float64(i), Outstanding: int64(n)})
		}
		return s
	}
	b := analyse(wave(72), 30*time.Second, 100)
	if b.Grew || !b.Lagged || b.MaxOutstanding != 72 {
		t.Errorf("a backlog of 72 at 100/s that drained judged %+v", b)
	}
	if b := analyse(wave(48), 30*time.Second, 100); b.Grew || b.Lagged {
		t.Errorf("a backlog of 48 at 100/s judged %+v", b)
	}
	if b := analyse(wave(8), 30*time.Second, 5); b.Lagged {
		t.Errorf("a backlog of 8 at 5/s, the pipeline's own, judged %+v", b)
	}
}

func TestReadMemoryOfSelf(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 || m.Anon > m.RSS {
		t.Errorf("memory %+v", m)
	}
	if _, err := ReadMemory(-1); err == nil {
		t.Error("no error for a missing process")
	}
}

func TestPaceRateStopsAtEnd(t *testing.T) {
	p := newPace(time.Second, 10)
	p.end = p.start // The run is already over.
	if _, ok := p.next(t.Context()); ok {
		t.Error("a rated pace handed out a request after its end")
	}
	full := newPace(time.Hour, 0)
	for want := range int64(3) {
		if s, ok := full.next(t.Context()); !ok || s.i != want {
			t.Fatalf("next = %d, %v; want %d", s.i, ok, want)
		}
	}
}

func TestPaceLastsUntilItsMinimum(t *testing.T) {
	for _, rate := range []float64{0, 1000} {
		p := newPace(time.Second, rate).atLeast(5)
		p.end = p.start // The time is up, but not the minimum.
		for want := range int64(5) {
			if s, ok := p.next(t.Context()); !ok || s.i != want {
				t.Fatalf("rate %v: next = %d, %v; want %d, true", rate, s.i, ok, want)
			}
		}
		if s, ok := p.next(t.Context()); ok {
			t.Errorf("rate %v: request %d handed out past both the end and the minimum", rate, s.i)
		}
	}
}

func TestReadCPUOfSelf(t *testing.T) {
	before, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n // Burn CPU so that the counter moves.
	}
	after, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time did not grow: %v then %v", before, after)
	}
	if _, err := ReadCPU(-1); err == nil {
		t.Error("no error for a missing process")
	}
}

func TestWhyTellsCPUBoundFromNot(t *testing.T) {
	// 2 cores busy 95% of 40 s for 3,040 deliveries: 25 ms each, 80/s.
	bound := Cost{CPU: map[string]float64{"machine": 76}, Wall: 40, Cores: 2}
	why := bound.why(3040, 100)
	if !strings.Contains(why, "95% busy over 2 cores") || !strings.Contains(why, "holds about 80 deliveries/s at most, and the 100/s offered needs 125% of it") {
		t.Errorf("CPU-bound run: %q", why)
	}
	// 86% busy over 34.5 s for 4,500 deliveries at 150/s: 13.2 ms each,
	// so the offered rate needs 99% of the cores. The machine is at its
	// limit although it measured under 90% busy.
	nearFull := Cost{CPU: map[string]float64{"machine": 59.4}, Wall: 34.535, Cores: 2}
	if why := nearFull.why(4500, 150); !strings.HasPrefix(why, "the machine's CPU: 86% busy") || !strings.Contains(why, "the 150/s offered needs 99% of it") {
		t.Errorf("near-full run: %q", why)
	}
	// 88% busy, and the offered rate needs 89.6%, which prints as 90%:
	// at the limit, as printed.
	edge := Cost{CPU: map[string]float64{"machine": 53.76}, Wall: 30.545, Cores: 2}
	if why := edge.why(3000, 100); !strings.HasPrefix(why, "the machine's CPU: 88% busy") || !strings.Contains(why, "needs 90% of it") {
		t.Errorf("run at the edge: %q", why)
	}
	idle := Cost{CPU: map[string]float64{"machine": 40}, Wall: 40, Cores: 2}
	if why := idle.why(3040, 100); !strings.HasPrefix(why, "not the machine's CPU (50% busy over 2 cores, 66% needed by the offered rate)") {
		t.Errorf("half-idle run: %q", why)
	}
	if why := (Cost{}).why(3040, 100); why != "" {
		t.Errorf("unmeasured run: %q", why)
	}
	grew := Backlog{Grew: true, Offered: 100}
	grew.Limit = limitOf(grew, bound, 3040)
	var out strings.Builder
	printWhy(&out, grew)
	if !strings.Contains(out.String(), "the backlog grew; the limit was the machine's CPU") {
		t.Errorf("printed %q", out.String())
	}
	if j, err := json.Marshal(grew); err != nil || !strings.Contains(string(j), `"limit":"the machine's CPU`) {
		t.Errorf("JSON %s (%v) lacks the limit", j, err)
	}
	lagged := Backlog{Lagged: true, Offered: 100, MaxOutstanding: 168}
	lagged.Limit = limitOf(lagged, bound, 3040)
	out.Reset()
	printWhy(&out, lagged)
	if !strings.Contains(out.String(), "the backlog did not grow but reached 168, 1.7 s of the offered rate; the limit was the machine's CPU") {
		t.Errorf("printed %q for a lagged backlog", out.String())
	}
	if j, err := json.Marshal(lagged); err != nil || !strings.Contains(string(j), `"lagged":true`) || !strings.Contains(string(j), `"limit":"the machine's CPU`) {
		t.Errorf("JSON %s (%v) of a lagged backlog", j, err)
	}
	flat := Backlog{Offered: 100}
	if flat.Limit = limitOf(flat, bound, 3040); flat.Limit != "" {
		t.Errorf("flat backlog limited by %q", flat.Limit)
	}
	out.Reset()
	printWhy(&out, flat)
	if out.Len() != 0 {
		t.Errorf("printed %q for a flat backlog", out.String())
	}
	if j, _ := json.Marshal(flat); strings.Contains(string(j), `"limit"`) {
		t.Errorf("JSON of a flat backlog names a limit: %s", j)
	}
}

// TestRedisCommandDeltas parses INFO commandstats and keeps, per command,
// what the second reading counted beyond the first.
func TestRedisCommandDeltas(t *testing.T) {
	before := parseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=10,usec=500,usec_per_call=50.00,rejected_calls=0,failed_calls=0\r\ncmdstat_ping:calls=3,usec=3,usec_per_call=1.00\r\n")
	after := parseCommandStats("# Commandstats\r\ncmdstat_evalsha:calls=14,usec=700,usec_per_call=50.00,rejected_calls=0,failed_calls=0\r\ncmdstat_ping:calls=3,usec=3,usec_per_call=1.00\r\ncmdstat_publish:calls=2,usec=1,usec_per_call=0.50\r\n")
	got := addCommandDelta(map[string]RedisCommand{"evalsha": {Calls: 1, Usec: 10}}, before, after)
	want := map[string]RedisCommand{"evalsha": {Calls: 5, Usec: 210}, "publish": {Calls: 2, Usec: 1}}
	if !maps.Equal(got, want) {
		t.Fatalf("deltas %v, want %v", got, want)
	}
	if got := addCommandDelta(nil, nil, after); got != nil {
		t.Fatalf("a missing reading gave %v, want nothing", got)
	}
}
