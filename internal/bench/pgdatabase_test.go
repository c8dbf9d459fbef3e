package bench

import (
	"bytes"
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
