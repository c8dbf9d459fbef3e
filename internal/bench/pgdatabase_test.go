package bench

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPostgresByDatabaseSplitsConnectionsFromTheRest(t *testing.T) {
	procs := map[int]procCPU{
		10: {group: "postgres", cpu: 2 * time.Second},        // a connection to furrow
		11: {group: "postgres", cpu: 1 * time.Second},        // another, opened during the run
		12: {group: "postgres", cpu: 3 * time.Second},        // temporal's
		13: {group: "postgres", cpu: 500 * time.Millisecond}, // the WAL writer: no database
		14: {group: "furrow", cpu: 7 * time.Second},          // not PostgreSQL
	}
	backends := mergeBackends(map[int]string{10: "furrow", 12: "other"}, map[int]string{11: "furrow", 12: "temporal"})
	got := postgresByDatabase(procs, backends)
	want := map[string]float64{"furrow": 3, "temporal": 3, otherBackends: 0.5}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for db, s := range want {
		if got[db] != s {
			t.Errorf("%s: %v s, want %v (all: %v)", db, got[db], s, got)
		}
	}
	if postgresByDatabase(procs, nil) != nil {
		t.Error("a split without pg_stat_activity's connections; want none")
	}
}

func TestCostPrintsPostgresByDatabaseMarkingFurrows(t *testing.T) {
	c := Cost{
		CPU:            map[string]float64{"machine": 10, "postgres": 6},
		Postgres:       map[string]float64{"furrow_db": 2, "temporal": 3, otherBackends: 1},
		FurrowDatabase: "furrow_db",
	}
	var b bytes.Buffer
	c.Print(&b, 1000)
	want := "PostgreSQL CPU per delivery by database, ms: temporal 3.00, furrow_db (Furrow's) 2.00, (other) 1.00"
	if !strings.Contains(b.String(), want) {
		t.Errorf("printed\n%s\nwant a line with %q", b.String(), want)
	}
}

func TestExtraOverEngineSplitsTheDifference(t *testing.T) {
	// 1,000 deliveries each. Furrow's run: its database 2 s, Temporal's
	// 5 s; the engine's: 4.5 s in Temporal's databases, its worker in the
	// bench.
	furrow := Cost{
		CPU:            map[string]float64{"machine": 22, "furrow": 4, "bench": 1, "postgres": 7.1, "temporal": 7, "redis": 0.2},
		Postgres:       map[string]float64{"furrow_db": 2, "temporal": 4, "visibility": 1, otherBackends: 0.1},
		FurrowDatabase: "furrow_db",
	}
	engine := Cost{
		CPU:            map[string]float64{"machine": 17, "furrow": 0.1, "bench": 2.7, "postgres": 4.6, "temporal": 7.5, "redis": 0.05},
		Postgres:       map[string]float64{"furrow_db": 0.05, "temporal": 3.5, "visibility": 1, otherBackends: 0.05},
		FurrowDatabase: "furrow_db",
	}
	extra := extraOverEngine(furrow.shares(1000), engine.shares(1000))
	want := map[string]float64{
		shareMachine: 5, shareFurrowDatabase: 1.95, shareOtherDatabases: 0.55, shareProcesses: 2.2,
		shareTemporal: -0.5, shareRedis: 0.15, shareRest: 0.65,
	}
	for k, v := range want {
		if d := extra[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %+.3f ms, want %+.3f (all: %v)", k, extra[k], v, extra)
		}
	}
	if len(extra) != len(want) {
		t.Errorf("shares %v, want exactly %v", extra, want)
	}
	var b bytes.Buffer
	printExtra(&b, extra)
	line := "Furrow's CPU per delivery over the engine's, ms: machine +5.00 = PostgreSQL in Furrow's database +1.95, " +
		"PostgreSQL in the other databases +0.55, furrow and bench processes +2.20, Temporal server -0.50, Redis +0.15, the rest +0.65"
	if !strings.Contains(b.String(), line) {
		t.Errorf("printed %q, want %q", b.String(), line)
	}
	// A run without the split by database cannot be set against one with it.
	if got := extraOverEngine(Cost{CPU: furrow.CPU}.shares(1000), engine.shares(1000)); got != nil {
		t.Errorf("mixed shares compared: %v", got)
	}
}

func TestKeysByValueLargestFirstTiesByName(t *testing.T) {
	got := keysByValue(map[string]float64{"b": 2, "a": 2, "c": 5, "d": 1}, func(v float64) float64 { return v })
	if want := []string{"c", "a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}

// TestVsEngineSaysWhenTheRatesDiffer: the CPU per delivery of two runs is
// like with like only at about the same delivered rate.
func TestVsEngineSaysWhenTheRatesDiffer(t *testing.T) {
	engine := EngineResult{side: side{PerSecond: 92.5, Delivered: 3000, Cost: Cost{CPU: map[string]float64{"machine": 64.9}}}}
	behind := DeliveryResult{side: side{PerSecond: 61.1, Delivered: 3000, Cost: Cost{CPU: map[string]float64{"machine": 91.3}}}}
	behind.Engine, behind.VsEngine = &engine, vsEngine(behind, engine)
	if !behind.VsEngine.RatesDiffer {
		t.Errorf("61.1/s against 92.5/s: %+v, want the rates marked as differing", behind.VsEngine)
	}
	var b bytes.Buffer
	behind.Print(&b)
	if !strings.Contains(b.String(), "the runs delivered at different rates (Furrow 61.1/s, the engine 92.5/s)") {
		t.Errorf("printed\n%s\nwithout the note on the rates", b.String())
	}
	even := DeliveryResult{side: side{PerSecond: 99.8, Delivered: 3000, Cost: behind.Cost}}
	kept := EngineResult{side: side{PerSecond: 100, Delivered: 3000, Cost: engine.Cost}}
	even.Engine, even.VsEngine = &kept, vsEngine(even, kept)
	if even.VsEngine.RatesDiffer {
		t.Errorf("99.8/s against 100/s marked as differing: %+v", even.VsEngine)
	}
	b.Reset()
	even.Print(&b)
	if strings.Contains(b.String(), "different rates") {
		t.Errorf("printed a note on the rates for like runs:\n%s", b.String())
	}
	if got := vsEngine(even, EngineResult{}); got.Rate != 0 || got.CPU != 0 {
		t.Errorf("against an engine run that delivered nothing: %+v, want zero ratios", got)
	}
}
