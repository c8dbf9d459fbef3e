package check

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Pool sizes as store.Open makes them: 16 connections unless the database
// URL's pool_max_conns names another, and never fewer than 5 (the reading
// writer's connection plus room beside it).
const (
	defaultFurrowPool = 16
	minFurrowPool     = 5
	// Migrations, `furrow admin`, psql: the headroom production.md counts.
	budgetHeadroom = 10
)

// furrowPool is the pool one Furrow process opens for databaseURL.
func furrowPool(t *testing.T, databaseURL string) int {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("FURROW_DATABASE_URL does not parse: %v", err)
	}
	v := u.Query().Get("pool_max_conns")
	if v == "" {
		return defaultFurrowPool
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("pool_max_conns=%q is not a number", v)
	}
	return max(n, minFurrowPool)
}

// postgresSetting returns the value of `-c name=value` in a postgres
// command line, or def.
func postgresSetting(t *testing.T, command []string, name string, def int) int {
	t.Helper()
	for i, a := range command {
		v, ok := strings.CutPrefix(a, name+"=")
		if !ok || i == 0 || command[i-1] != "-c" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q is not a number", name, v)
		}
		return n
	}
	return def
}

// TestComposeConnectionBudget: PostgreSQL holds every pool of the topology
// at once. A pool it cannot fill does not fail; the topology just delivers
// a fraction of its rate (docs/operating/production.md, the connection
// budget).
func TestComposeConnectionBudget(t *testing.T) {
	p := loadCompose(t)
	pg, ok := p.Services["postgresql"]
	if !ok {
		t.Fatal("no postgresql service")
	}
	maxConns := postgresSetting(t, pg.Command, "max_connections", 100)
	reserved := postgresSetting(t, pg.Command, "superuser_reserved_connections", 3)
	need := budgetHeadroom
	var counted []string
	for name, s := range p.Services {
		switch {
		case strings.Contains(s.Image, "furrow") && s.Restart != "no":
			// serve and worker; one-shot migrate and admin runs are the headroom.
			dbURL := s.Environment["FURROW_DATABASE_URL"]
			if dbURL == nil {
				t.Errorf("service %s: no FURROW_DATABASE_URL", name)
				continue
			}
			n := s.GetScale() * furrowPool(t, *dbURL)
			need += n
			counted = append(counted, name+" "+strconv.Itoa(n))
		case strings.HasPrefix(s.Image, "temporalio/server:"):
			services := 4 // frontend, history, matching, worker
			if v := s.Environment["TEMPORAL_SERVICES"]; v != nil && *v != "" {
				services = len(strings.Split(*v, ","))
			}
			per := 0
			for _, setting := range []string{"SQL_MAX_CONNS", "SQL_VIS_MAX_CONNS"} {
				v := s.Environment[setting]
				if v == nil {
					t.Errorf("service %s: %s is not set; max_connections is sized by it, not by the image's default", name, setting)
					continue
				}
				n, err := strconv.Atoi(*v)
				if err != nil {
					t.Fatalf("service %s: %s=%q is not a number", name, setting, *v)
				}
				per += n
			}
			n := s.GetScale() * services * per
			need += n
			counted = append(counted, name+" "+strconv.Itoa(n))
		}
	}
	if len(counted) < 3 {
		t.Fatalf("counted only %v; want serve, worker and temporal", counted)
	}
	if need > maxConns-reserved {
		t.Errorf("the pools need %d connections (%v + %d headroom), PostgreSQL's max_connections %d holds %d besides the %d reserved for superusers",
			need, counted, budgetHeadroom, maxConns, maxConns-reserved, reserved)
	}
}

// TestComposePublishesOnlyTheProxy: the proxy is the one container reached
// from outside the host. The Temporal UI (no login; it resets and
// terminates workflows), Prometheus (no login) and Grafana are published on
// the host's loopback only.
func TestComposePublishesOnlyTheProxy(t *testing.T) {
	p := loadCompose(t)
	var proxyPublished bool
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if name == "proxy" {
				proxyPublished = true
				continue
			}
			if port.HostIP != "127.0.0.1" {
				t.Errorf("service %s publishes %s on %q, not on 127.0.0.1 alone", name, port.Published, port.HostIP)
			}
		}
	}
	if !proxyPublished {
		t.Error("the proxy publishes no port: devices could not reach Furrow")
	}
}
