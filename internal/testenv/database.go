package testenv

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Migrator applies the schema to the database at a URL. Digest names the
// schema's content, so that a template built from it can be reused safely.
type Migrator struct {
	Digest  string
	Migrate func(ctx context.Context, databaseURL string) error
}

// NoSchema builds nothing: NewDatabase(t, NoSchema) is an empty database,
// as one is before its first migration.
var NoSchema = Migrator{Digest: "empty0", Migrate: func(context.Context, string) error { return nil }}

var templates sync.Map // digest -> *templateOnce

type templateOnce struct {
	once sync.Once
	name string
	err  error
}

// NewDatabase creates an empty database for t, cloned from a template that
// m migrated once, and drops it when t ends. It returns the database's URL.
func NewDatabase(t testing.TB, m Migrator) string {
	t.Helper()
	base := PostgresURL(t)
	v, _ := templates.LoadOrStore(m.Digest, &templateOnce{})
	tpl := v.(*templateOnce)
	tpl.once.Do(func() { tpl.name, tpl.err = ensureTemplate(base, m) })
	if tpl.err != nil {
		t.Fatalf("testenv: template database: %v", tpl.err)
	}
	name := "furrow_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := exec(base, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tpl.name)); err != nil {
		t.Fatalf("testenv: clone template: %v", err)
	}
	t.Cleanup(func() {
		_ = exec(base, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
	})
	return withDatabase(base, name)
}

// ensureTemplate builds the template for m once per schema digest, across
// processes: an advisory lock keeps parallel test binaries from racing.
func ensureTemplate(base string, m Migrator) (string, error) {
	name := "furrow_tpl_" + m.Digest
	if len(name) > 60 {
		name = name[:60]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(728361)"); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(728361)")
	var ready bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	if err := m.Migrate(ctx, withDatabase(base, name)); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	// Marking it a template last means a half-built one is never cloned.
	_, err = conn.Exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
	return name, err
}

func exec(base, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	return u.String()
}
