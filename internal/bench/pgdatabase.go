package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// otherBackends labels PostgreSQL's CPU outside the connections that
// pg_stat_activity names a database for: its background processes, and
// the postmaster, which counts the CPU of connections that ended during
// the run.
const otherBackends = "(other)"

// pgBackends maps the pid of each connection that pg_stat_activity lists
// to its database; nil when PostgreSQL cannot be asked.
func pgBackends(ctx context.Context, databaseURL string) map[int]string {
	out := map[int]string{}
	if err := withPostgres(ctx, databaseURL, func(ctx context.Context, conn *pgx.Conn) error {
		rows, _ := conn.Query(ctx, `SELECT pid, datname FROM pg_stat_activity WHERE datname IS NOT NULL`)
		var pid int32
		var db string
		_, err := pgx.ForEachRow(rows, []any{&pid, &db}, func() error {
			out[int(pid)] = db
			return nil
		})
		return err
	}); err != nil {
		return nil
	}
	return out
}

// postgresByDatabase splits the CPU of PostgreSQL's processes in procs by
// the database of each connection in backends; nil without backends.
func postgresByDatabase(procs map[int]procCPU, backends map[int]string) map[string]float64 {
	if backends == nil {
		return nil
	}
	out := map[string]float64{}
	for pid, p := range procs {
		if p.group != "postgres" {
			continue
		}
		db, ok := backends[pid]
		if !ok {
			db = otherBackends
		}
		out[db] += p.cpu.Seconds()
	}
	return out
}

// databaseName is the database of a PostgreSQL URL, "" if it cannot tell.
func databaseName(databaseURL string) string {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return ""
	}
	return cfg.Database
}

// printPostgres writes c's PostgreSQL CPU per delivery by database, the
// costliest first, marking the server's own.
func (c Cost) printPostgres(w io.Writer, deliveries int64) {
	if len(c.Postgres) == 0 {
		return
	}
	dbs := keysByValue(c.Postgres, func(cpu float64) float64 { return cpu })
	parts := make([]string, 0, len(dbs))
	for _, db := range dbs {
		name := db
		if db == c.FurrowDatabase {
			name += " (Furrow's)"
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", name, 1000*c.Postgres[db]/float64(deliveries)))
	}
	fmt.Fprintf(w, "  PostgreSQL CPU per delivery by database, ms: %s\n", strings.Join(parts, ", "))
}

// mergeBackends is the union of two pg_stat_activity reads; a pid in both
// takes later's database, since a pid may be reused.
func mergeBackends(earlier, later map[int]string) map[int]string {
	out := make(map[int]string, len(earlier)+len(later))
	maps.Copy(out, earlier)
	maps.Copy(out, later)
	return out
}

// keysByValue returns m's keys, the largest value(m[k]) first, ties in
// the keys' order.
func keysByValue[V any](m map[string]V, value func(V) float64) []string {
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(value(m[b]), value(m[a])), cmp.Compare(a, b))
	})
}

// Shares of a run's CPU per delivery, as Cost.shares names them.
const (
	shareMachine        = "machine"
	shareFurrowDatabase = "postgres_furrow"
	shareOtherDatabases = "postgres_other"
	sharePostgres       = "postgres" // when no split by database was read
	shareProcesses      = "processes"
	shareTemporal       = "temporal"
	shareRedis          = "redis"
	shareRest           = "rest"
)

// shares is c per delivery, in ms, by share: the machine's busy CPU;
// PostgreSQL's in Furrow's database and in the others (or whole, without
// the split); the furrow and bench processes together, since the bare
// engine's worker runs in the bench; the Temporal server; Redis; and the
// rest of the machine's (the kernel's work charged to no process, other
// processes). Nil when nothing was delivered or measured.
func (c Cost) shares(deliveries int64) map[string]float64 {
	if deliveries <= 0 || len(c.CPU) == 0 {
		return nil
	}
	per := 1000 / float64(deliveries)
	m := map[string]float64{
		shareMachine:   c.CPU["machine"] * per,
		shareProcesses: (c.CPU["furrow"] + c.CPU["bench"]) * per,
		shareTemporal:  c.CPU["temporal"] * per,
		shareRedis:     c.CPU["redis"] * per,
	}
	if len(c.Postgres) > 0 {
		own := c.Postgres[c.FurrowDatabase]
		m[shareFurrowDatabase] = own * per
		m[shareOtherDatabases] = (c.CPU["postgres"] - own) * per
	} else {
		m[sharePostgres] = c.CPU["postgres"] * per
	}
	rest := m[shareMachine]
	for k, v := range m {
		if k != shareMachine {
			rest -= v
		}
	}
	m[shareRest] = rest
	return m
}

// extraOverEngine is furrow less engine, share by share; nil unless both
// were measured with the same shares.
func extraOverEngine(furrow, engine map[string]float64) map[string]float64 {
	if furrow == nil || engine == nil {
		return nil
	}
	out := map[string]float64{}
	for k, v := range furrow {
		e, ok := engine[k]
		if !ok {
			return nil
		}
		out[k] = v - e
	}
	return out
}

// shareNames says each share for people, in the order printed.
var shareNames = []struct{ key, name string }{
	{shareFurrowDatabase, "PostgreSQL in Furrow's database"},
	{shareOtherDatabases, "PostgreSQL in the other databases"},
	{sharePostgres, "PostgreSQL"},
	{shareProcesses, "furrow and bench processes"},
	{shareTemporal, "Temporal server"},
	{shareRedis, "Redis"},
	{shareRest, "the rest"},
}

// printExtra writes where Furrow's extra CPU per delivery went.
func printExtra(w io.Writer, extra map[string]float64) {
	if len(extra) == 0 {
		return
	}
	var parts []string
	for _, s := range shareNames {
		if v, ok := extra[s.key]; ok {
			parts = append(parts, fmt.Sprintf("%s %+.2f", s.name, v))
		}
	}
	fmt.Fprintf(w, "  Furrow's CPU per delivery over the engine's, ms: machine %+.2f = %s\n", extra[shareMachine], strings.Join(parts, ", "))
}
