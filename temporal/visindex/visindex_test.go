package visindex_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/temporal/visindex"
	"github.com/furrowhq/furrow/workflows"
)

// miniature is a visibility table with indexes of both kinds, named as in
// Temporal's PostgreSQL schema: some in Unused, some that must stay.
var miniature = testenv.Migrator{Digest: "visindex_v3", Migrate: func(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		CREATE TABLE executions_visibility (namespace_id text, run_id text, workflow_id text, status int,
			close_time timestamp, start_time timestamp, bool01 boolean, text01 tsvector, keyword01 text,
			int01 bigint, int02 bigint, int03 bigint, buildids jsonb,
			PRIMARY KEY (namespace_id, run_id));
		CREATE INDEX default_idx ON executions_visibility (namespace_id, close_time);
		CREATE INDEX by_workflow_id ON executions_visibility (namespace_id, workflow_id, close_time);
		CREATE INDEX by_status ON executions_visibility (namespace_id, status, close_time);
		CREATE INDEX by_keyword_01 ON executions_visibility (namespace_id, keyword01, close_time);
		CREATE INDEX by_int_01 ON executions_visibility (namespace_id, int01, close_time);
		CREATE INDEX by_bool_01 ON executions_visibility (namespace_id, bool01, close_time);
		CREATE INDEX by_text_01 ON executions_visibility USING gin (text01);
		CREATE INDEX by_build_ids ON executions_visibility USING gin (buildids jsonb_path_ops);
		INSERT INTO executions_visibility VALUES ('ns', 'r1', 'w1', 1, now(), now(), true, to_tsvector('a b'), 'k', 500, NULL, NULL, '["x"]');`)
	return err
}}

func TestTrimPostgresDropsUnusedAndMakesNeededIndexes(t *testing.T) {
	url := testenv.NewDatabase(t, miniature)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	done, err := visindex.TrimPostgres(ctx, url)
	if err != nil || done != (visindex.Trimmed{Dropped: 3, Restored: 2}) {
		t.Fatalf("first run: %+v, %v; want the 3 unused indexes dropped and the 2 missing integer slots made", done, err)
	}
	want := []string{"by_int_01", "by_int_02", "by_int_03", "by_keyword_01", "by_status", "by_workflow_id", "default_idx", "executions_visibility_pkey"}
	if got := indexes(t, url); !slices.Equal(got, want) {
		t.Fatalf("indexes left %v, want %v", got, want)
	}
	if done, err := visindex.TrimPostgres(ctx, url); err != nil || done != (visindex.Trimmed{}) {
		t.Fatalf("second run: %+v, %v; want nothing changed", done, err)
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

func TestTrimPostgresReportsAnUnreachableDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := visindex.TrimPostgres(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
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

// TestUnusedKeepsFurrowsSearchAttributes: the server gives a custom search
// attribute the first free slot of its type in no fixed order, so no slot
// of a type Furrow registers (FurrowLastStatus is an integer, the others
// keywords) may be trimmed, or queries by it would scan the namespace.
func TestUnusedKeepsFurrowsSearchAttributes(t *testing.T) {
	slot := map[enumspb.IndexedValueType]*regexp.Regexp{
		enumspb.INDEXED_VALUE_TYPE_KEYWORD: regexp.MustCompile(`^by_keyword_\d+$`),
		enumspb.INDEXED_VALUE_TYPE_INT:     regexp.MustCompile(`^by_int_\d+$`),
	}
	for name, typ := range workflows.SearchAttributes() {
		re, ok := slot[typ]
		if !ok {
			t.Fatalf("%s is of type %s, which this test does not know the slots of", name, typ)
		}
		for _, idx := range visindex.Unused {
			if re.MatchString(idx) {
				t.Errorf("Unused trims %s, a slot %s (%s) may take", idx, name, typ)
			}
		}
	}
	if n := len(visindex.Unused); n != 50 {
		t.Errorf("Unused names %d indexes; docs/operating/production.md says 50", n)
	}
}
