package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// awkwardPassword holds characters that end or split a URL's userinfo
// (/ @ #), others a URL gives meaning to (+ =), and a quote.
const awkwardPassword = `aB3/x+Yz=p@ss#1'`

// databaseLogin is the user and password a Furrow process with env (its
// container's environment) logs in to PostgreSQL with: its
// FURROW_DATABASE_URL read by pgx as store.Open reads it, with the PG*
// variables of env and no others, as the container has them.
func databaseLogin(t *testing.T, env map[string]string) (user, password string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PG") {
			t.Setenv(k, "") // pgx takes an empty variable for an unset one
		}
	}
	// Nor a ~/.pgpass of this machine's, which the container does not have.
	t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
	for k, v := range env {
		if strings.HasPrefix(k, "PG") {
			t.Setenv(k, v)
		}
	}
	cfg, err := pgconn.ParseConfig(env["FURROW_DATABASE_URL"])
	if err != nil {
		t.Fatalf("FURROW_DATABASE_URL does not parse: %v", err)
	}
	return cfg.User, cfg.Password
}

// TestComposeDatabasePassword: every Furrow service logs in with
// POSTGRES_PASSWORD exactly as .env gives it, whatever its characters.
// Written into FURROW_DATABASE_URL it would need percent-encoding: / @ #
// break the URL, and the services fail or send another password.
func TestComposeDatabasePassword(t *testing.T) {
	p := loadComposeEnv(t, "POSTGRES_PASSWORD="+awkwardPassword, "GRAFANA_ADMIN_PASSWORD=test")
	pg := p.Services["postgresql"].Environment
	if pg["POSTGRES_USER"] == nil || pg["POSTGRES_PASSWORD"] == nil || *pg["POSTGRES_PASSWORD"] != awkwardPassword {
		t.Fatalf("PostgreSQL is not set up with POSTGRES_PASSWORD as given: %v", pg)
	}
	var checked int
	for name, s := range p.Services {
		if !strings.Contains(s.Image, "furrow") {
			continue
		}
		checked++
		env := map[string]string{}
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		t.Run(name, func(t *testing.T) {
			user, password := databaseLogin(t, env)
			if user != *pg["POSTGRES_USER"] || password != awkwardPassword {
				t.Errorf("logs in as %q with password %q, want %q with %q", user, password, *pg["POSTGRES_USER"], awkwardPassword)
			}
		})
	}
	if checked < 3 {
		t.Errorf("checked %d Furrow services, want migrate, serve and worker", checked)
	}
}
