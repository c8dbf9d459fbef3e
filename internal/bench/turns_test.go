package bench

import (
	"slices"
	"testing"
	"time"
)

func TestTurnOrderAlternatesSoThatADriftWeighsOnBothSides(t *testing.T) {
	got := turnOrder(2)
	if want := []bool{true, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("turnOrder(2) = %v; want engine, Furrow, Furrow, engine", got)
	}
	// With an even number of turns the sides' mean slots are equal, so a
	// steady drift cancels out.
	for _, turns := range []int{2, 4, 6} {
		var engine, furrow int
		for slot, isEngine := range turnOrder(turns) {
			if isEngine {
				engine += slot
			} else {
				furrow += slot
			}
		}
		if engine != furrow {
			t.Errorf("turns %d: engine's slots sum to %d, Furrow's to %d", turns, engine, furrow)
		}
	}
}

func TestDeliveryTurnsAddUp(t *testing.T) {
	turn := func(accepted, inLoad int64, lat time.Duration, grew bool, cpu float64, slope float64) DeliveryResult {
		return DeliveryResult{Accepted: accepted, Status: map[string]int64{"201": accepted}, side: side{
			Delivered: accepted, InLoad: inLoad,
			Cost: Cost{CPU: map[string]float64{"machine": cpu}, Wall: 10, Cores: 2,
				Databases:  []DatabaseCost{{Database: "f", Calls: accepted, ExecMs: 1}},
				Statements: []StatementCost{{Database: "f", Query: "INSERT", Calls: accepted, ExecMs: 1}}},
			raw: rawTurns{
				post: []time.Duration{time.Millisecond}, delivery: []time.Duration{lat}, load: 10 * time.Second,
				backlogs: []Backlog{{Offered: 100, Samples: []Sample{{AtSeconds: 1}, {AtSeconds: 9, Outstanding: 40}}, MaxOutstanding: 40, Grew: grew, Slope: slope}},
			},
		}}
	}
	var r DeliveryResult
	r.add(turn(1000, 900, 10*time.Millisecond, false, 10, 0))
	r.add(turn(1000, 1000, 30*time.Millisecond, true, 30, 10))
	r.finish()
	if r.Turns != 2 || r.Accepted != 2000 || r.Delivered != 2000 || r.Status["201"] != 2000 {
		t.Errorf("turns %d, accepted %d, delivered %d, status %v", r.Turns, r.Accepted, r.Delivered, r.Status)
	}
	if r.PerSecond != 95 {
		t.Errorf("rate %.1f/s; want 1,900 delivered in 20 s of load", r.PerSecond)
	}
	if r.Latency.Count != 2 || r.Latency.Max != 30*time.Millisecond || r.PostLatency.Count != 2 {
		t.Errorf("latency %+v, post latency %+v; want both turns' in one summary", r.Latency, r.PostLatency)
	}
	if c := r.Cost; c.CPU["machine"] != 40 || c.Wall != 20 || c.Databases[0].Calls != 2000 || len(c.Statements) != 1 || c.Statements[0].ExecMs != 2 {
		t.Errorf("cost %+v; want the turns' CPU, wall time and statements added", c)
	}
	if !slices.Equal(r.raw.cpu, []float64{0.01, 0.03}) || !slices.Equal(ratios(r.raw.cpu, []float64{0.01, 0.02}), []float64{1, 1.5}) {
		t.Errorf("CPU per delivery by turn %v; want each turn's own, for the turn-by-turn ratio", r.raw.cpu)
	}
	b := r.Backlog
	if !b.Grew || b.Lagged || b.Slope != 5 || b.MaxOutstanding != 40 || len(b.Samples) != 4 || b.Samples[3].AtSeconds != 18 {
		t.Errorf("backlog %+v; want it grown, as the second turn's, with both turns' samples one after the other", b)
	}
	if b.Limit == "" {
		t.Error("a grown backlog names no limit")
	}
}

func TestCostPlusKeepsTheCostliestStatements(t *testing.T) {
	var a, b Cost
	a.CPU, b.CPU = map[string]float64{"machine": 1}, map[string]float64{"machine": 2, "redis": 1}
	for i := range topStatements {
		a.Statements = append(a.Statements, StatementCost{Query: "a" + string(rune('0'+i)), ExecMs: float64(i)})
	}
	b.Statements = []StatementCost{{Query: "a0", ExecMs: 100}}
	sum := a.plus(b)
	if len(sum.Statements) != topStatements || sum.Statements[0].Query != "a0" || sum.Statements[0].ExecMs != 100 {
		t.Errorf("statements %+v; want a0's two parts first, ten in all", sum.Statements)
	}
	if sum.CPU["machine"] != 3 || sum.CPU["redis"] != 1 || a.CPU["machine"] != 1 {
		t.Errorf("CPU %v, first cost's %v; want the sum, the parts untouched", sum.CPU, a.CPU)
	}
}
