package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// otherBackends labels PostgreSQL's CPU outside the connections that
// pg_stat_activity names a database for: its background processes, and
// the postmaster, which counts the CPU of connections that ended during
// the run.
const otherBackends = "(other)"

// backendsTimeout bounds reading pg_stat_activity.
const backendsTimeout = 5 * time.Second

// pgBackends maps the pid of each connection that pg_stat_activity lists
// to its database; nil when PostgreSQL cannot be asked.
func pgBackends(ctx context.Context, databaseURL string) map[int]string {
	if databaseURL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, backendsTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, _ := conn.Query(ctx, `SELECT pid, datname FROM pg_stat_activity WHERE datname IS NOT NULL`)
	out := map[int]string{}
	var pid int32
	var db string
	if _, err := pgx.ForEachRow(rows, []any{&pid, &db}, func() error {
		out[int(pid)] = db
		return nil
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
	dbs := slices.SortedFunc(maps.Keys(c.Postgres), func(a, b string) int {
		return cmp.Or(cmp.Compare(c.Postgres[b], c.Postgres[a]), cmp.Compare(a, b))
	})
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
	out := maps.Clone(earlier)
	if out == nil {
		out = map[int]string{}
	}
	maps.Copy(out, later)
	return out
}
