package visindex_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/temporal/visindex"
)

// miniature is a visibility table with indexes of both kinds, named as in
// Temporal's PostgreSQL schema: some in Unused, some that must stay.
var miniature = testenv.Migrator{Digest: "visindex_v1", Migrate: func(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		CREATE TABLE executions_visibility (namespace_id text, run_id text, workflow_id text, status int,
			close_time timestamp, bool01 boolean, text01 tsvector, keyword01 text, buildids jsonb,
			PRIMARY KEY (namespace_id, run_id));
		CREATE INDEX default_idx ON executions_visibility (namespace_id, close_time);
		CREATE INDEX by_workflow_id ON executions_visibility (namespace_id, workflow_id, close_time);
		CREATE INDEX by_status ON executions_visibility (namespace_id, status, close_time);
		CREATE INDEX by_keyword_01 ON executions_visibility (namespace_id, keyword01, close_time);
		CREATE INDEX by_bool_01 ON executions_visibility (namespace_id, bool01, close_time);
		CREATE INDEX by_text_01 ON executions_visibility USING gin (text01);
		CREATE INDEX by_build_ids ON executions_visibility USING gin (buildids jsonb_path_ops);
		INSERT INTO executions_visibility VALUES ('ns', 'r1', 'w1', 1, now(), true, to_tsvector('a b'), 'k', '["x"]');`)
	return err
}}

func TestDropPostgresDropsOnlyUnusedIndexes(t *testing.T) {
	url := testenv.NewDatabase(t, miniature)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	n, err := visindex.DropPostgres(ctx, url)
	if err != nil || n != 3 {
		t.Fatalf("first run: dropped %d, %v; want the 3 unused indexes", n, err)
	}
	if got, want := indexes(t, url), []string{"by_keyword_01", "by_status", "by_workflow_id", "default_idx", "executions_visibility_pkey"}; !slices.Equal(got, want) {
		t.Fatalf("indexes left %v, want %v", got, want)
	}
	if n, err := visindex.DropPostgres(ctx, url); err != nil || n != 0 {
		t.Fatalf("second run: dropped %d, %v; want nothing", n, err)
	}
	// A query on a column whose index is gone still answers the same.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var runs int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM executions_visibility WHERE namespace_id = 'ns' AND bool01`).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("query on a trimmed column: %d rows, %v; want 1", runs, err)
	}
}

func TestDropPostgresReportsAnUnreachableDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := visindex.DropPostgres(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		t.Fatal("no error for a database that cannot be reached")
	}
}

func indexes(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `SELECT indexname FROM pg_indexes WHERE tablename = 'executions_visibility' ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}
