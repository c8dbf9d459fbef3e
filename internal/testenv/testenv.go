// Package testenv provides the real PostgreSQL and Redis that integration
// tests run against: containers started with dockertest when a Docker engine
// answers, otherwise the servers named by FURROW_TEST_DATABASE_URL and
// FURROW_TEST_REDIS_URL, otherwise the local defaults. A test that cannot
// reach its service fails and says how to provide one.
package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ory/dockertest/v3"
	"github.com/redis/go-redis/v9"
)

// Local defaults, used when neither Docker nor the environment provide one.
const (
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

const howTo = "start one (`make test` does; see CONTRIBUTING.md), or set %s to a reachable server"

var (
	dockerOnce sync.Once
	dockerPool *dockertest.Pool

	pgOnce sync.Once
	pgURL  string
	pgErr  error

	redisOnce sync.Once
	redisURL  string
	redisErr  error
)

// docker returns a pool when a Docker engine answers, else nil.
func docker() *dockertest.Pool {
	dockerOnce.Do(func() {
		if os.Getenv("FURROW_TEST_NO_DOCKER") != "" {
			return
		}
		pool, err := dockertest.NewPool("")
		if err != nil {
			return
		}
		pool.MaxWait = 60 * time.Second
		if pool.Client.Ping() == nil {
			dockerPool = pool
		}
	})
	return dockerPool
}

// PostgresURL returns the URL of a reachable PostgreSQL server's maintenance
// database, failing t if there is none.
func PostgresURL(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() { pgURL, pgErr = findPostgres() })
	if pgErr != nil {
		t.Fatalf("testenv: no PostgreSQL: %v; "+howTo, pgErr, "FURROW_TEST_DATABASE_URL")
	}
	return pgURL
}

func findPostgres() (string, error) {
	if pool := docker(); pool != nil {
		res, err := pool.Run("postgres", "15", []string{"POSTGRES_HOST_AUTH_METHOD=trust"})
		if err == nil {
			_ = res.Expire(1800)
			u := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", res.GetHostPort("5432/tcp"))
			return u, pool.Retry(func() error { return pingPostgres(u) })
		}
	}
	u := os.Getenv("FURROW_TEST_DATABASE_URL")
	if u == "" {
		u = DefaultDatabaseURL
	}
	return u, pingPostgres(u)
}

func pingPostgres(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(u), err)
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// RedisURL returns the URL of a reachable Redis, failing t if there is none.
func RedisURL(t testing.TB) string {
	t.Helper()
	redisOnce.Do(func() { redisURL, redisErr = findRedis() })
	if redisErr != nil {
		t.Fatalf("testenv: no Redis: %v; "+howTo, redisErr, "FURROW_TEST_REDIS_URL")
	}
	return redisURL
}

func findRedis() (string, error) {
	if pool := docker(); pool != nil {
		res, err := pool.Run("redis", "7", nil)
		if err == nil {
			_ = res.Expire(1800)
			u := fmt.Sprintf("redis://%s/0", res.GetHostPort("6379/tcp"))
			return u, pool.Retry(func() error { return pingRedis(u) })
		}
	}
	u := os.Getenv("FURROW_TEST_REDIS_URL")
	if u == "" {
		u = DefaultRedisURL
	}
	return u, pingRedis(u)
}

func pingRedis(u string) error {
	opt, err := redis.ParseURL(u)
	if err != nil {
		return err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// Redis returns a client of a reachable Redis, closed when t ends. Tests
// sharing the server must use keys of their own (for example with t.Name()).
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable url)"
	}
	return p.Redacted()
}

// ProxiedRedis returns client options for the test Redis that go through a
// Proxy the test can cut or blackhole, and that proxy. Context deadlines
// bound every command, as in Furrow's own client.
func ProxiedRedis(t testing.TB) (*redis.Options, *Proxy) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, opt.Addr)
	opt.Addr = p.Addr
	opt.ContextTimeoutEnabled = true
	return opt, p
}
